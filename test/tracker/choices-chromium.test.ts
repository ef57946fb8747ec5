import { describe, expect, test } from 'bun:test'
import type { RedactionStrategy } from '@sightline/tracker'
import { chromiumSite, htmlPage, logOutAndLeave, startTracker } from './helpers/chromium'
import { byId, recordingOf } from './helpers/recording'

/**
 * Choices a form shows without a value: which radio button of a group is checked, whether a checkbox
 * is, and a custom widget's ARIA state (a listbox's selected option, a menu's checked item, a pressed
 * toggle), in headless Chromium with t.js as built. Masked, the recording is the same whichever
 * choice is made, by the page's HTML, its script or a person; unmasked, it shows the choice.
 */

const DIAGNOSES = ['SECRET-FLU', 'SECRET-DIABETES', 'SECRET-HIV-POSITIVE']

let page = ''
const chromium = chromiumSite(() => htmlPage(page))

/** A choice: the radio (index of DIAGNOSES), option and menu item the page's HTML checks, then its script; whether the box is checked, the toggle pressed, at first. */
interface Choice {
  first: number
  then: number
  pregnant: boolean
  pressed: boolean
}

/**
 * The recording of the form, with `choice` made: at first by the page's HTML; then the page's script
 * checks radio `then` (its `checked` property) and the radio after it (its `checked` attribute), moves
 * the listbox's and the menu's choice to `then` and flips the toggle; then a person clicks the
 * checkbox; then a new full snapshot. Answers each full snapshot's copy of the form, the attribute
 * changes and additions in it, its input events (without their times).
 */
async function recordedForm(strategy: RedactionStrategy, choice: Choice) {
  const radios = DIAGNOSES.map((value, i) => `<label><input type="radio" name="diagnosis" id="d${i}" value="${value}"${i === choice.first ? ' checked' : ''}>${value}</label>`).join('')
  const options = DIAGNOSES.map((value, i) => `<li role="option" id="o${i}" aria-selected="${i === choice.first}">${value}</li>`).join('')
  const items = DIAGNOSES.map((value, i) => `<div role="menuitemradio" id="m${i}" aria-checked="${i === choice.first}">${value}</div>`).join('')
  page = `<!doctype html><html><head><meta charset="utf-8"><title>t</title></head><body><form id="form">${radios}
    <label><input type="checkbox" id="pregnant" name="pregnant" value="SECRET-YES"${choice.pregnant ? ' checked' : ''}>I am pregnant</label>
    <ul role="listbox" id="listbox">${options}</ul><div role="menu" id="menu">${items}</div>
    <button type="button" id="toggle" aria-pressed="${choice.pressed}">Smoker</button></form><script src="/t.js"></script></body></html>`
  chromium.sends.length = 0
  const tab = chromium.browser.page
  await tab.goto(chromium.site.url + '/')
  await startTracker(tab, 'sl_dev_choices', { logLevel: 'none', redactionStrategy: strategy })
  await tab.waitForTimeout(300)
  // rrweb reads a checked property the script set a moment later: by then the attribute below would have unchecked it.
  await tab.evaluate((then) => ((document.getElementById('d' + then) as HTMLInputElement).checked = true), choice.then)
  await tab.waitForTimeout(100)
  await tab.evaluate(({ then, count }) => {
    document.getElementById('d' + ((then + 1) % count))!.setAttribute('checked', '')
    for (let i = 0; i < count; i++) {
      document.getElementById('o' + i)!.setAttribute('aria-selected', String(i === then))
      document.getElementById('m' + i)!.setAttribute('aria-checked', String(i === then))
    }
    const toggle = document.getElementById('toggle')!
    toggle.setAttribute('aria-pressed', String(toggle.getAttribute('aria-pressed') !== 'true'))
  }, { then: choice.then, count: DIAGNOSES.length })
  await tab.waitForTimeout(100)
  await tab.click('#pregnant')
  await tab.waitForTimeout(100)
  await logOutAndLeave(chromium)
  const recording = recordingOf(chromium.sends, (root) => byId(root, 'form'))
  return { ...recording, inputs: recording.inputs.map(({ id, text, isChecked }: { id: number; text: string; isChecked: boolean }) => ({ id, text, isChecked })) }
}

const ONE: Choice = { first: 0, then: 1, pregnant: false, pressed: false }
const OTHER: Choice = { first: 2, then: 0, pregnant: true, pressed: true }

describe('radio buttons, checkboxes and ARIA choices in the recording, in Chromium', () => {
  test("privacy-first: a masked form's recording is the same whichever radio, checkbox state, option, menu item and toggle state is chosen, by its HTML, the page's script or a person", async () => {
    const one = await recordedForm({ mode: 'privacy-first' }, ONE)
    const other = await recordedForm({ mode: 'privacy-first' }, OTHER)
    expect(one.everything).not.toContain('SECRET')
    expect(one.snapshots).toHaveLength(2)
    expect(other.snapshots).toEqual(one.snapshots)
    expect(other.attributes).toEqual(one.attributes)
    expect(other.adds).toEqual(one.adds)
    expect(other.inputs).toEqual(one.inputs)
    expect(JSON.stringify(one.snapshots)).not.toMatch(/checked|selected|pressed/)
  }, 60_000)

  for (const strategy of [{ mode: 'visibility-first' }, { mode: 'privacy-first', unredactSelectors: ['#form'] }] satisfies RedactionStrategy[]) {
    test(`${strategy.mode}${strategy.mode === 'privacy-first' ? ', unredacted' : ''}: the form shows the choices, in its snapshots, attribute changes and input events`, async () => {
      const { snapshots, attributes, inputs } = await recordedForm(strategy, ONE)
      const [first, last] = snapshots
      const id = (key: string) => byId(first, key).id
      expect(byId(first, 'd0').attributes!.checked).toBe(true)
      expect(byId(first, 'pregnant').attributes!.checked).toBeUndefined()
      expect(byId(first, 'o0').attributes!['aria-selected']).toBe('true')
      expect(byId(first, 'm0').attributes!['aria-checked']).toBe('true')
      expect(byId(first, 'toggle').attributes!['aria-pressed']).toBe('false')
      // The script checked radio 1 (an input event) and set radio 2's checked attribute; a person checked the box.
      expect(inputs).toContainEqual({ id: id('d1'), text: DIAGNOSES[1], isChecked: true })
      expect(attributes).toContainEqual({ id: id('d2'), attributes: { checked: '' } })
      expect(inputs).toContainEqual({ id: id('pregnant'), text: 'SECRET-YES', isChecked: true })
      expect(attributes).toContainEqual({ id: id('o1'), attributes: { 'aria-selected': 'true' } })
      expect(attributes).toContainEqual({ id: id('m1'), attributes: { 'aria-checked': 'true' } })
      expect(attributes).toContainEqual({ id: id('toggle'), attributes: { 'aria-pressed': 'true' } })
      expect(byId(last, 'pregnant').attributes!.checked).toBe(true)
      expect(byId(last, 'o1').attributes!['aria-selected']).toBe('true')
    }, 60_000)
  }
})
