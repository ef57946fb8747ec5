import { describe, expect, test } from 'bun:test'
import type { RedactionStrategy } from '@sightline/tracker'
import { chromiumSite, htmlPage, logOutAndLeave, startTracker } from './helpers/chromium'
import { find, recordingOf } from './helpers/recording'

/**
 * A select in the recording, in headless Chromium with t.js as built: which option is chosen, by the
 * page's HTML, its script (the `selected` attribute, `selectedIndex`) or a person. Masked, the
 * recording of the select is the same whichever is chosen; unmasked, it shows the choice.
 */

/** Values of other lengths, as a country's or a condition's are: stars as long as the chosen one would tell it. */
const VALUES = ['SECRET-A', 'SECRET-BBBB', 'SECRET-CCCCCCCC']

let page = ''
const chromium = chromiumSite(() => htmlPage(page))

/**
 * The recording of the select, with options chosen in the order `choice` gives (indexes of VALUES):
 * the first by the page's HTML, the second by the page's script setting its `selected` attribute (and
 * taking the first's away), the third by `selectedIndex`, and the first again by a person; then a new
 * full snapshot. Answers what the recording says of the select: each full snapshot's copy of it, the
 * attribute changes and additions in it, its input events (without their times).
 */
async function recordedSelect(strategy: RedactionStrategy, choice: number[]) {
  const options = VALUES.map((value, i) => `<option value="${value}"${i === choice[0] ? ' selected' : ''}>${value}-TEXT</option>`).join('')
  page = `<!doctype html><html><head><meta charset="utf-8"><title>t</title></head><body><select id="condition">${options}</select><script src="/t.js"></script></body></html>`
  chromium.sends.length = 0
  const tab = chromium.browser.page
  await tab.goto(chromium.site.url + '/')
  await startTracker(tab, 'sl_dev_select', { logLevel: 'none', redactionStrategy: strategy })
  await tab.waitForTimeout(300)
  await tab.evaluate((choice) => {
    const select = document.getElementById('condition') as HTMLSelectElement
    select.options[choice[1]].setAttribute('selected', '')
    select.options[choice[0]].removeAttribute('selected')
  }, choice)
  await tab.waitForTimeout(100)
  await tab.evaluate((index) => ((document.getElementById('condition') as HTMLSelectElement).selectedIndex = index), choice[2])
  await tab.waitForTimeout(100)
  await tab.selectOption('#condition', VALUES[choice[0]])
  await tab.waitForTimeout(100)
  await logOutAndLeave(chromium)
  return recordingOf(chromium.sends, (root) => find(root, (node) => node.tagName === 'select')!)
}

describe('a select in the recording, in Chromium', () => {
  test("privacy-first: a masked select's recording is the same whichever option is chosen, by its HTML, the page's script (the selected attribute, selectedIndex) or a person", async () => {
    const one = await recordedSelect({ mode: 'privacy-first' }, [0, 1, 2])
    const other = await recordedSelect({ mode: 'privacy-first' }, [2, 0, 1])
    expect(one.everything).not.toContain('SECRET')
    expect(one.snapshots).toHaveLength(2)
    expect(other.snapshots).toEqual(one.snapshots)
    expect(other.attributes).toEqual(one.attributes)
    expect(other.adds).toEqual(one.adds)
    expect(other.inputs).toEqual(one.inputs)
    // The page's script chose, and a person: recorded, as no value.
    expect(one.inputs.map((input) => input.text)).toEqual([''])
    expect(one.snapshots.map((select) => select.attributes!.value)).toEqual(['', ''])
  }, 60_000)

  test('visibility-first: an unmasked select shows the option chosen, in its snapshot, the changes of its selected attribute and its input events', async () => {
    const { snapshots, attributes, inputs } = await recordedSelect({ mode: 'visibility-first' }, [0, 1, 2])
    expect(snapshots.map((select) => select.attributes!.value)).toEqual([VALUES[0], VALUES[0]])
    const second = snapshots[0].childNodes!.filter((node) => node.tagName === 'option')[1]
    expect(attributes).toContainEqual({ id: second.id, attributes: { selected: '' } })
    expect(inputs.map((input) => input.text)).toEqual([VALUES[2], VALUES[0]])
  }, 60_000)
})
