import { catalogue, FIRST_PAGE, money, PAGE_SIZE, reviewsOf, type Product } from './catalogue'
import { cartLine, productCard, productGrid, quickView, reviewList, toast } from './templates'

/**
 * The bench shop's own script, bundled for the browser: what makes its pages change while someone
 * uses them (filters and sorting re-render the grid, the cart drawer, toasts, a promo carousel, a
 * quick view, lazy recommendations, a product gallery), so a recording holds the DOM mutations
 * a real shop causes and not only pointer movement.
 */
const products = catalogue()
const byId = new Map(products.map((p) => [p.id, p]))
const $ = <T extends Element = HTMLElement>(selector: string) => document.querySelector<T>(selector)

// The cart lives in localStorage, so it follows the shopper from page to page.
const cart: Map<number, number> = new Map(JSON.parse(localStorage.getItem('cart') ?? '[]'))
function saveCart() {
  localStorage.setItem('cart', JSON.stringify([...cart]))
  const count = [...cart.values()].reduce((a, b) => a + b, 0)
  $('#cart-count')!.textContent = String(count)
  const lines = [...cart].map(([id, quantity]) => [byId.get(id)!, quantity] as const)
  const linesHtml = lines.map(([p, q]) => cartLine(p, q)).join('')
  const subtotal = money(lines.reduce((sum, [p, q]) => sum + p.price * q, 0))
  $('#cart-lines')!.innerHTML = linesHtml
  $('#cart-subtotal')!.textContent = subtotal
  const summary = $('#summary')
  if (summary) {
    summary.innerHTML = linesHtml
    $('#total')!.textContent = subtotal
  }
}

function addToCart(product: Product) {
  cart.set(product.id, (cart.get(product.id) ?? 0) + 1)
  saveCart()
if (grid) $('#result-count')!.textContent = `${matching().length} results`
  const holder = document.createElement('div')
  holder.innerHTML = toast(product)
  const element = holder.firstElementChild!
  $('#toasts')!.append(element)
  setTimeout(() => element.classList.add('opacity-0'), 2500)
  setTimeout(() => element.remove(), 2800)
}

function setDrawer(open: boolean) {
  $('#cart-drawer')!.classList.toggle('pointer-events-none', !open)
  $('#cart-backdrop')!.classList.toggle('opacity-0', !open)
  $('#cart-backdrop')!.classList.toggle('opacity-100', open)
  $('#cart-panel')!.classList.toggle('translate-x-full', !open)
  $('#cart-panel')!.classList.toggle('translate-x-0', open)
}

// Listing pages: filters, search and sorting re-render the grid, as a client-side shop does.
const grid = $('#grid')
const category = $('main')?.dataset.category
let shown = FIRST_PAGE
const PRICE_RANGES: Record<string, [number, number]> = { 'Under €25': [0, 25], '€25 to €50': [25, 50], '€50 to €100': [50, 100], '€100 to €200': [100, 200], 'Over €200': [200, Infinity] }

function matching(): Product[] {
  const form = $<HTMLFormElement>('#filters')
  const checked = (name: string) => (form ? [...form.querySelectorAll<HTMLInputElement>(`input[name="${name}"]:checked`)].map((i) => i.value) : [])
  const [brands, colours, prices, ratings] = ['brand', 'colour', 'price', 'rating'].map(checked)
  const query = ($<HTMLInputElement>('#search')?.value ?? '').trim().toLowerCase()
  const minRating = ratings.length ? Math.min(...ratings.map((r) => Number(r[0]))) : 0
  const inCategory = category === 'New arrivals' ? products : category === 'Sale' ? products.filter((p) => p.compareAt) : products.filter((p) => p.category === category)
  const list = inCategory.filter(
    (p) =>
      (!brands.length || brands.includes(p.brand)) &&
      (!colours.length || p.colours.some((c) => colours.includes(c))) &&
      (!prices.length || prices.some((r) => p.price >= PRICE_RANGES[r][0] && p.price < PRICE_RANGES[r][1])) &&
      p.rating >= minRating &&
      (!query || `${p.name} ${p.brand} ${p.category}`.toLowerCase().includes(query)),
  )
  const sort = $<HTMLSelectElement>('#sort')?.value
  if (sort === 'price-asc') list.sort((a, b) => a.price - b.price)
  if (sort === 'price-desc') list.sort((a, b) => b.price - a.price)
  if (sort === 'rating') list.sort((a, b) => b.rating - a.rating)
  if (sort === 'newest') list.sort((a, b) => b.id - a.id)
  return list
}

const cardElement = (product: Product) => {
  const holder = document.createElement('div')
  holder.innerHTML = productCard(product)
  return holder.firstElementChild as HTMLElement
}

/** Keyed by product, as a UI framework re-renders a list: cards that stay are kept, in the new order. */
function renderGrid() {
  if (!grid) return
  const list = matching()
  const existing = new Map([...grid.children].map((el) => [Number((el as HTMLElement).dataset.productId), el]))
  let previous: Element | null = null
  for (const product of list.slice(0, shown)) {
    const card = existing.get(product.id) ?? cardElement(product)
    existing.delete(product.id)
    if ((previous ? previous.nextElementSibling : grid.firstElementChild) !== card) previous ? previous.after(card) : grid.prepend(card)
    previous = card
  }
  for (const card of existing.values()) card.remove()
  $('#result-count')!.textContent = `${list.length} results`
  $('#load-more')!.classList.toggle('hidden', list.length <= shown)
}

let searchTimer: ReturnType<typeof setTimeout> | undefined
$('#search')?.addEventListener('input', () => {
  clearTimeout(searchTimer)
  searchTimer = setTimeout(() => ((shown = FIRST_PAGE), renderGrid()), 200)
})
$('#filters')?.addEventListener('change', () => ((shown = FIRST_PAGE), renderGrid()))
$('#sort')?.addEventListener('change', renderGrid)
$('#load-more')?.addEventListener('click', () => {
  const list = matching()
  grid!.append(...list.slice(shown, shown + PAGE_SIZE).map(cardElement))
  shown += PAGE_SIZE
  $('#load-more')!.classList.toggle('hidden', list.length <= shown)
})

// The promo carousel moves on by itself.
const slides = [...document.querySelectorAll<HTMLElement>('.promo-slide')]
let slide = 0
if (slides.length) {
  setInterval(() => {
    const next = (slide + 1) % slides.length
    slides[slide].classList.replace('opacity-100', 'opacity-0')
    slides[next].classList.replace('opacity-0', 'opacity-100')
    document.querySelector(`[data-dot="${slide}"]`)!.className = 'promo-dot h-2 w-2 rounded-full bg-white/40'
    document.querySelector(`[data-dot="${next}"]`)!.className = 'promo-dot h-2 w-2 rounded-full bg-white'
    slide = next
  }, 4000)
}

// The header gets a shadow once the page scrolls; recommendations load when they come into view.
addEventListener('scroll', () => $('header')!.classList.toggle('shadow-sm', scrollY > 40), { passive: true })
const recommendations = $('#recommendations')
if (recommendations) {
  new IntersectionObserver((entries, observer) => {
    if (!entries.some((e) => e.isIntersecting)) return
    observer.disconnect()
    const picks = products.filter((_, i) => i % 37 === 3).slice(0, 8)
    recommendations.innerHTML = `<h2 class="text-xl font-bold text-gray-900">Recommended for you</h2><div class="mt-6 grid grid-cols-2 gap-x-4 gap-y-8 sm:grid-cols-4">${productGrid(picks)}</div>`
  }).observe(recommendations)
}

// Product pages: gallery, colour and size pickers, accordions, more reviews.
const productId = Number($('main')?.dataset.product)
let reviewsShown = 8

document.addEventListener('click', (event) => {
  const target = event.target as HTMLElement
  const hit = (selector: string) => target.closest<HTMLElement>(selector)
  let el: HTMLElement | null
  if ((el = hit('[data-add-to-cart]'))) addToCart(byId.get(Number(el.dataset.addToCart))!)
  else if ((el = hit('[data-wishlist]'))) {
    el.classList.toggle('text-rose-500')
    el.setAttribute('aria-pressed', String(el.classList.contains('text-rose-500')))
  } else if ((el = hit('[data-quick-view]'))) {
    event.preventDefault()
    document.body.insertAdjacentHTML('beforeend', quickView(byId.get(Number(el.dataset.quickView))!))
  } else if (hit('[data-close-quick-view]')) $('#quick-view')?.remove()
  else if (hit('#cart-button')) setDrawer(true)
  else if (hit('#cart-close') || target.id === 'cart-backdrop') setDrawer(false)
  else if ((el = hit('[data-increment]'))) (cart.set(Number(el.dataset.increment), cart.get(Number(el.dataset.increment))! + 1), saveCart())
  else if ((el = hit('[data-decrement]'))) {
    const id = Number(el.dataset.decrement)
    if (cart.get(id)! > 1) cart.set(id, cart.get(id)! - 1)
    else cart.delete(id)
    saveCart()
if (grid) $('#result-count')!.textContent = `${matching().length} results`
  } else if ((el = hit('[data-remove]'))) (cart.delete(Number(el.dataset.remove)), saveCart())
  else if ((el = hit('[data-thumb]'))) {
    const product = byId.get(productId)!
    for (const thumb of document.querySelectorAll<HTMLElement>('[data-thumb]')) {
      thumb.classList.toggle('ring-2', thumb === el)
      thumb.classList.toggle('ring-indigo-500', thumb === el)
      thumb.classList.toggle('ring-1', thumb !== el)
    }
    const image = $<HTMLImageElement>('#main-image img')!
    image.src = `/img/products/${product.slug}-${el.dataset.thumb}-960w.webp`
    image.srcset = ''
  } else if ((el = hit('[data-size]')) || (el = hit('[data-colour]'))) {
    const group = el.dataset.size !== undefined ? '[data-size]' : '[data-colour]'
    for (const option of el.parentElement!.querySelectorAll<HTMLElement>(group)) {
      option.classList.toggle('ring-2', option === el)
      option.classList.toggle('ring-indigo-500', option === el)
    }
  } else if ((el = hit('[data-accordion]'))) {
    const panel = document.querySelector(`[data-panel="${el.dataset.accordion}"]`)!
    panel.classList.toggle('hidden')
    el.querySelector('span')!.textContent = panel.classList.contains('hidden') ? '+' : '−'
  } else if (hit('#more-reviews')) {
    reviewsShown += 8
    $('#reviews')!.innerHTML = reviewList(reviewsOf(byId.get(productId)!, reviewsShown))
  } else if (hit('#place-order')) {
    const button = $<HTMLButtonElement>('#place-order')!
    button.disabled = true
    button.textContent = 'Placing your order…'
    setTimeout(() => {
      $('#checkout')!.outerHTML = `<div class="mt-10 rounded-lg bg-indigo-50 p-8 text-center"><h2 class="text-2xl font-bold text-indigo-700">Thank you for your order</h2><p class="mt-2 text-sm text-gray-600">A confirmation is on its way to your inbox. Order number NF-${Math.floor(Math.random() * 1e6)}.</p></div>`
      cart.clear()
      saveCart()
if (grid) $('#result-count')!.textContent = `${matching().length} results`
    }, 900)
  }
})

// Card numbers are grouped in fours as they are typed, the way checkout forms do it.
$<HTMLInputElement>('#cc-number')?.addEventListener('input', (event) => {
  const input = event.target as HTMLInputElement
  input.value = input.value.replace(/\D/g, '').slice(0, 16).replace(/(\d{4})(?=\d)/g, '$1 ')
})

saveCart()
if (grid) $('#result-count')!.textContent = `${matching().length} results`
