@echo off
rem povdesk: the POV Desk command line, run by the app's own runtime with ELECTRON_RUN_AS_NODE=1.
rem The installer puts this folder (<install>\resources\bin) on the user's PATH.
setlocal
set "ELECTRON_RUN_AS_NODE=1"
"%~dp0..\..\povdesk-desktop.exe" "%~dp0povdesk-cli.cjs" %*
exit /b %ERRORLEVEL%
