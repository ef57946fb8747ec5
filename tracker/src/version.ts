/** Sent as `sdkVersion`; a test keeps it equal to the package version. */
export const SDK_VERSION = '0.1.0'
