/**
 * The script-tag build (`t.js`): `window.ServiceTracker`, and with `data-api-key` on the script tag
 * the tracker starts by itself:
 *   <script src="/_sl/t.js" data-api-key="sl_live_..." async></script>
 * On a page twice (the template's snippet and a tag manager's), the second keeps the first's
 * `ServiceTracker`: its init with the same key is the same tracker, started once.
 */
import { ServiceTracker } from './index'

const Tracker = ((window as unknown as { ServiceTracker?: typeof ServiceTracker }).ServiceTracker ??= ServiceTracker)
/**
 * The tag this runs from: a classic script's `document.currentScript`. A module script has none
 * (`<script type="module" src="/_sl/t.js" data-api-key="…">`, as bundler habits paste it): it is taken
 * to be the page's first `…/t.js` tag with a `data-api-key`. Of t.js, not any script: another module's
 * `data-api-key` (a widget's, above ours) is another vendor's key, neither to send nor to start by.
 * (No `[type=module]`: t.js lacks its bytes, and a classic t.js tag found instead starts the same one
 * tracker.) A module runs once per URL, so two such tags start one tracker, the first's, whatever the
 * timing. The tag's `src` gives the relay's prefix (index.ts's own reading of currentScript finds none
 * in a module), so the key and where it sends come from one tag.
 */
const tag = (document.currentScript ?? document.querySelector('[src*="/t.js"][data-api-key]')) as HTMLScriptElement | null
const { apiKey, release } = tag?.dataset ?? {}
if (apiKey) Tracker.init(apiKey, { release }, { scriptUrl: tag!.src }).start()
