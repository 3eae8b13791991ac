; Included by electron-builder's NSIS script (electron-builder.yml nsis.include).
; Puts <install>\resources\bin (povdesk.cmd) on the user's PATH, and takes it off on uninstall.
; [Environment]::SetEnvironmentVariable broadcasts the change, so new terminals see it.

!macro customInstall
  nsExec::ExecToLog 'powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -Command "$$d = \"$INSTDIR\resources\bin\"; $$p = [Environment]::GetEnvironmentVariable(\"Path\", \"User\"); if ($$null -eq $$p) { $$p = \"\" }; if (-not (($$p -split \";\") -contains $$d)) { [Environment]::SetEnvironmentVariable(\"Path\", (($$p.TrimEnd(\";\") + \";\" + $$d).TrimStart(\";\")), \"User\") }"'
!macroend

!macro customUnInstall
  nsExec::ExecToLog 'powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -Command "$$d = \"$INSTDIR\resources\bin\"; $$p = [Environment]::GetEnvironmentVariable(\"Path\", \"User\"); if ($$null -ne $$p) { [Environment]::SetEnvironmentVariable(\"Path\", ((($$p -split \";\") | Where-Object { $$_ -and $$_ -ne $$d }) -join \";\"), \"User\") }"'
!macroend
