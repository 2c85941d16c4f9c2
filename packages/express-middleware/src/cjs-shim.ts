// Injected into the CommonJS build only (tsup.config.ts) as its
// `import.meta.url`: the URL of the bundle's own file.
import { pathToFileURL } from 'node:url';

export const importMetaUrl = pathToFileURL(__filename).href;
