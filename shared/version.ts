/** Kept equal to package.json's version (a unit test checks). */
export const APP_VERSION = '0.1.0';
