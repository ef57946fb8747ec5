import type { Page } from 'playwright-core'
import { CATEGORIES, slugify } from './catalogue'

/**
 * A scripted shopper: what one person does on the bench shop in a few minutes, with the pointer
 * moving in paths between the things they look at, wheel scrolling, typing at a person's pace,
 * filtering, the cart, a product page and the checkout. The seed picks which products, filters and
 * words, so sessions differ from one another as real ones do.
 */
export async function shop(page: Page, origin: string, random: () => number): Promise<void> {
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]
  const pause = (min: number, max: number) => page.waitForTimeout(min + random() * (max - min))
  const viewport = page.viewportSize()!
  let pointer = { x: viewport.width / 2, y: viewport.height / 2 }

  /** Moves the pointer to (x, y) along a slightly curved path, as a hand does. */
  const moveTo = async (x: number, y: number) => {
    const steps = 8 + Math.floor(random() * 20)
    const bend = { x: (random() - 0.5) * 120, y: (random() - 0.5) * 120 }
    for (let i = 1; i <= steps; i++) {
      const t = i / steps
      const arc = Math.sin(Math.PI * t)
      await page.mouse.move(pointer.x + (x - pointer.x) * t + bend.x * arc, pointer.y + (y - pointer.y) * t + bend.y * arc)
      await page.waitForTimeout(12 + random() * 25)
    }
    pointer = { x, y }
  }
  const wander = async (moves: number) => {
    for (let i = 0; i < moves; i++) {
      await moveTo(40 + random() * (viewport.width - 80), 80 + random() * (viewport.height - 120))
      await pause(100, 700)
    }
  }
  const scroll = async (pixels: number) => {
    const step = Math.sign(pixels) * (80 + Math.floor(random() * 80))
    for (let done = 0; Math.abs(done) < Math.abs(pixels); done += step) {
      await page.mouse.wheel(0, step)
      await page.waitForTimeout(30 + random() * 90)
    }
    await pause(300, 1200)
  }
  /** Moves to a visible element matching `selector` (the nth, or one at random) and clicks it. */
  const clickOn = async (selector: string, nth?: number) => {
    const all = page.locator(selector).filter({ visible: true })
    const count = await all.count()
    if (count === 0) return false
    const target = all.nth(Math.min(count - 1, nth ?? Math.floor(random() * Math.min(count, 12))))
    await target.scrollIntoViewIfNeeded({ timeout: 2_000 }).catch(() => {})
    const box = await target.boundingBox({ timeout: 2_000 }).catch(() => null)
    if (!box) return false
    await moveTo(box.x + box.width * (0.3 + random() * 0.4), box.y + box.height * (0.3 + random() * 0.4))
    await pause(80, 400)
    await page.mouse.click(pointer.x, pointer.y)
    await pause(300, 1000)
    return true
  }
  const type = async (selector: string, text: string) => {
    await clickOn(selector, 0)
    for (const char of text) {
      await page.keyboard.type(char)
      await page.waitForTimeout(60 + random() * 160)
    }
    await pause(400, 1200)
  }

  page.setDefaultTimeout(5_000)
  // The front page: look around, scroll the grid, hover cards, add a few to the cart.
  await page.goto(origin + '/')
  await pause(800, 1500)
  await wander(6)
  await scroll(1200 + random() * 1500)
  await wander(4)
  for (let i = 0; i < 2 + Math.floor(random() * 3); i++) await clickOn('[data-add-to-cart]')
  await clickOn('[data-wishlist]')
  await scroll(2000 + random() * 3000)
  await clickOn('#load-more', 0)
  await scroll(1500)
  await clickOn('[data-quick-view]')
  await wander(3)
  await clickOn('#quick-view [data-add-to-cart]', 0)
  await clickOn('[data-close-quick-view]', 0)

  // Search and filter: every change re-renders the grid.
  await page.evaluate(() => scrollTo(0, 0))
  await type('#search', pick(['linen', 'jacket', 'wool', 'sneakers', 'organic', 'mug']))
  await wander(3)
  await page.locator('#search').fill('')
  await pause(500, 900)
  for (let i = 0; i < 2 + Math.floor(random() * 3); i++) await clickOn('#filters input[type="checkbox"]', Math.floor(random() * 30))
  await page.locator('#sort').selectOption(pick(['price-asc', 'price-desc', 'rating', 'newest']))
  await pause(500, 1200)
  await scroll(1500 + random() * 2000)
  await wander(4)

  // The cart drawer: open it, change a quantity, close it.
  await page.evaluate(() => scrollTo(0, 0))
  await clickOn('#cart-button', 0)
  await clickOn('[data-increment]', 0)
  await clickOn('[data-decrement]')
  await clickOn('#cart-close', 0)

  // A category through the navigation, then a product page.
  await clickOn(`nav a[href="/c/${slugify(pick(CATEGORIES))}"]`, 0)
  await page.waitForLoadState('domcontentloaded')
  await pause(800, 1500)
  await wander(4)
  await scroll(800 + random() * 1200)
  await clickOn('#grid h3 a')
  await page.waitForLoadState('domcontentloaded')
  await pause(800, 1500)
  for (let i = 0; i < 3; i++) await clickOn('[data-thumb]', 1 + Math.floor(random() * 3))
  await clickOn('[data-colour]')
  await clickOn('[data-size]')
  await clickOn('[data-accordion]', Math.floor(random() * 3))
  await clickOn('main [data-add-to-cart]', 0)
  await scroll(1500)
  await clickOn('#more-reviews', 0)
  await scroll(1500 + random() * 1000)
  await wander(3)

  // Checkout: a form typed in at a person's pace (the tracker masks every value).
  await page.goto(origin + '/checkout')
  await pause(800, 1500)
  const person = pick([
    ['anna.keller@example.com', '+49 151 2345678', 'Anna', 'Keller', 'Lindenstraße 12', 'Berlin', '10969'],
    ['marco.bianchi@example.org', '+39 347 1234567', 'Marco', 'Bianchi', 'Via Roma 8', 'Milano', '20121'],
    ['sofia.ruiz@example.net', '+34 612 345 678', 'Sofía', 'Ruiz', 'Calle Mayor 5', 'Madrid', '28013'],
  ])
  const fields = ['#email', '#tel', '#given-name', '#family-name', '#street-address', '#address-level2', '#postal-code']
  for (let i = 0; i < fields.length; i++) await type(fields[i], person[i])
  await page.locator('#country').selectOption({ index: Math.floor(random() * 6) })
  await type('#cc-number', '4242424242424242')
  await type('#cc-exp', '12/29')
  await type('#cc-csc', '123')
  await clickOn('#place-order', 0)
  await pause(1500, 2500)
  await wander(3)
}
