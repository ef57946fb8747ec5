/**
 * The script-tag build (`t.js`): `window.ServiceTracker`, and with `data-api-key` on the script tag
 * the tracker starts by itself:
 *   <script src="/_sl/t.js" data-api-key="sl_live_..." async></script>
 * On a page twice (the template's snippet and a tag manager's), the second keeps the first's
 * `ServiceTracker`: its init with the same key is the same tracker, started once.
 */
import { ServiceTracker } from './index'

const Tracker = ((window as unknown as { ServiceTracker?: typeof ServiceTracker }).ServiceTracker ??= ServiceTracker)
const { apiKey, release } = (document.currentScript as HTMLScriptElement | null)?.dataset ?? {}
if (apiKey) Tracker.init(apiKey, { release }).start()
