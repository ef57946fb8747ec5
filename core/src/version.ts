import corePackage from '../package.json'

export const VERSION: string = corePackage.version
