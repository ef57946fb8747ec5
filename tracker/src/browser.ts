/**
 * The script-tag build (`t.js`): `window.ServiceTracker`, and with `data-api-key` on the script tag
 * the tracker starts by itself:
 *   <script src="/_sl/t.js" data-api-key="sl_live_..." async></script>
 */
import { ServiceTracker } from './index'

const script = document.currentScript as HTMLScriptElement | null
;(window as unknown as { ServiceTracker: typeof ServiceTracker }).ServiceTracker = ServiceTracker
const apiKey = script?.dataset.apiKey
if (apiKey) ServiceTracker.init(apiKey, { release: script?.dataset.release }).start()
