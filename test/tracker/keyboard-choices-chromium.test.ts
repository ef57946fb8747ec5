import { describe, expect, test } from 'bun:test'
import type { RedactionStrategy } from '@sightline/tracker'
import { chromiumSite, htmlPage, logOutAndLeave, startTracker, type Tab } from './helpers/chromium'
import { byId, recordingOf } from './helpers/recording'

/**
 * Choices made without a pointer on the option itself, in headless Chromium with t.js as built: arrow
 * keys in a radio group (which check the radio they move to, and click it), Space on a checkbox, keys
 * on a select, a custom radio group's key handler (its aria-checked and roving focus), a script
 * checking a radio, `form.reset()`. Masked, nothing sent says which is chosen: not rrweb's focus and
 * click events, nor its input events, nor the automatic $click; a person's mouse click still shows where.
 */

let page = ''
const chromium = chromiumSite(() => htmlPage(page))

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>t</title></head><body><form id="form">
<label><input type="radio" name="d" id="d0" value="SECRET-FLU">flu</label><label><input type="radio" name="d" id="d1" value="SECRET-HIV">hiv</label><label><input type="radio" name="d" id="d2" value="SECRET-DIABETES">diabetes</label>
<label><input type="checkbox" id="pregnant" value="SECRET-YES">pregnant</label>
<select id="condition"><option value="SECRET-A">apple</option><option value="SECRET-B">banana</option><option value="SECRET-C">cherry</option></select>
<div role="radiogroup" id="group"><div role="radio" tabindex="0" id="r0" aria-checked="true">a</div><div role="radio" tabindex="-1" id="r1" aria-checked="false">b</div><div role="radio" tabindex="-1" id="r2" aria-checked="false">c</div></div>
<ul role="listbox" id="list" tabindex="0" aria-activedescendant="o0"><li role="option" id="o0" aria-selected="true">x</li><li role="option" id="o1" aria-selected="false">y</li><li role="option" id="o2" aria-selected="false">z</li></ul>
</form><script>
  // A custom radio group as ARIA's practices make one: arrows move the check and the focus together.
  const radios = [...document.querySelectorAll('[role=radio]')]
  document.getElementById('group').addEventListener('keydown', (event) => {
    const at = radios.indexOf(document.activeElement), next = radios[(at + (event.key === 'ArrowDown' ? 1 : radios.length - 1)) % radios.length]
    for (const radio of radios) radio.setAttribute('aria-checked', String(radio === next)), (radio.tabIndex = radio === next ? 0 : -1)
    next.focus()
  })
  // A listbox that keeps the focus itself and points at its chosen option, moved by arrows as well.
  const list = document.getElementById('list'), options = [...list.children]
  list.addEventListener('keydown', (event) => {
    const at = options.findIndex((option) => option.id === list.getAttribute('aria-activedescendant')), next = options[(at + (event.key === 'ArrowDown' ? 1 : options.length - 1)) % options.length]
    for (const option of options) option.setAttribute('aria-selected', String(option === next))
    list.setAttribute('aria-activedescendant', next.id)
  })
</script><script src="/t.js"></script></body></html>`

/**
 * The recording of the form and the automatic events, with the choices made by `key` ('ArrowDown' or
 * 'ArrowUp'): from the first radio, focused, the key checks the second or the last; Space on the box;
 * the key and a letter on the select; the key in the custom group. Answers the rrweb events of the form
 * (without their times) and the automatic events (without times and ids).
 */
async function chosenByKeys(strategy: RedactionStrategy, key: string, more: (tab: Tab) => Promise<void> = async () => {}) {
  page = PAGE
  chromium.sends.length = 0
  const tab = chromium.browser.page
  await tab.goto(chromium.site.url + '/')
  await startTracker(tab, 'sl_dev_keyboard_choices', { logLevel: 'none', redactionStrategy: strategy })
  await tab.waitForTimeout(300)
  await tab.focus('#d0')
  await tab.keyboard.press(key)
  await tab.keyboard.press('Tab')
  await tab.keyboard.press('Space')
  await tab.focus('#condition')
  await tab.keyboard.press(key)
  await tab.keyboard.press(key === 'ArrowDown' ? 'b' : 'c')
  await tab.focus('#r0')
  await tab.keyboard.press(key)
  await tab.focus('#list')
  await tab.keyboard.press(key)
  await more(tab)
  await tab.waitForTimeout(200)
  await logOutAndLeave(chromium)
  const events = chromium.sends.filter((s) => s.path === '/events').flatMap((s) => s.body.events) as { type: number; data: any }[]
  const automatic = chromium.sends.filter((s) => s.path === '/customEvent/batch').flatMap((s) => s.body.events) as { eventName: string; eventProperties: unknown }[]
  return {
    ...recordingOf(chromium.sends, (root) => byId(root, 'form')),
    incremental: events.filter((e) => e.type === 3).map((e) => e.data),
    automatic: automatic.map(({ eventName, eventProperties }) => ({ eventName, eventProperties })),
  }
}

describe('choices made without a pointer on them, in Chromium', () => {
  test('privacy-first: nothing sent says which radio, box state, option or custom radio the keyboard chose (focus, clicks, input events, $click)', async () => {
    const one = await chosenByKeys({ mode: 'privacy-first' }, 'ArrowDown')
    const other = await chosenByKeys({ mode: 'privacy-first' }, 'ArrowUp')
    expect(one.everything).not.toContain('SECRET')
    expect(other.incremental).toEqual(one.incremental)
    expect(other.automatic).toEqual(one.automatic)
    expect(other.snapshots).toEqual(one.snapshots)
    // Nor does any click on a radio or the box, nor focus on them.
    const ids = ['d0', 'd1', 'd2', 'pregnant', 'r0', 'r1', 'r2'].map((key) => byId(one.snapshots[0], key).id)
    expect(one.incremental.filter((data) => data.source === 2 && ids.includes(data.id))).toEqual([])
    expect(one.automatic.map((event) => event.eventName)).not.toContain('$click')
  }, 60_000)

  test('privacy-first: a script checking a radio and form.reset() say nothing either', async () => {
    const script = (index: number) => async (tab: Tab) => {
      await tab.evaluate((index) => ((document.getElementById('d' + index) as HTMLInputElement).click(), (document.getElementById('d' + index) as HTMLInputElement).checked = true), index)
      await tab.waitForTimeout(100)
      await tab.evaluate(() => (document.getElementById('form') as HTMLFormElement).reset())
    }
    const one = await chosenByKeys({ mode: 'privacy-first' }, 'ArrowDown', script(1))
    const other = await chosenByKeys({ mode: 'privacy-first' }, 'ArrowDown', script(2))
    expect(other.incremental).toEqual(one.incremental)
    expect(other.automatic).toEqual(one.automatic)
  }, 60_000)

  test("privacy-first: a person's mouse click on a masked radio still shows where they click", async () => {
    const { snapshots, incremental, automatic } = await chosenByKeys({ mode: 'privacy-first' }, 'ArrowDown', (tab) => tab.click('#d2'))
    const d2 = byId(snapshots[0], 'd2').id
    expect(incremental.filter((data) => data.source === 2 && data.id === d2).map((data) => data.type)).toEqual([1, 0, 2])
    expect(automatic).toContainEqual({ eventName: '$click', eventProperties: { tag: 'input', id: 'd2', selector: 'input#d2' } })
  }, 60_000)

  test('visibility-first: the keyboard’s choice shows, in focus, clicks and $click', async () => {
    const { snapshots, incremental, automatic } = await chosenByKeys({ mode: 'visibility-first' }, 'ArrowDown')
    const id = (key: string) => byId(snapshots[0], key).id
    expect(incremental).toContainEqual({ source: 2, type: 5, id: id('d1') })
    expect(incremental).toContainEqual({ source: 2, type: 5, id: id('r1') })
    expect(incremental.flatMap((data) => data.attributes ?? [])).toContainEqual({ id: id('list'), attributes: { 'aria-activedescendant': 'o1' } })
    expect(byId(snapshots[0], 'r0').attributes!.tabindex).toBe('0')
    expect(incremental.some((data) => data.source === 2 && data.type === 2 && data.id === id('d1'))).toBe(true)
    expect(automatic).toContainEqual({ eventName: '$click', eventProperties: { tag: 'input', id: 'd1', selector: 'input#d1', text: undefined } })
  }, 60_000)
})
