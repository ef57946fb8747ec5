/** connection.js as the tracker loads it when first needed (gzip, the reachability probe): for a transport made by a test. */
export const later = () => import('@sightline/tracker/connection')
