import { CATEGORIES, catalogue, FIRST_PAGE, money, reviewsOf, slugify, type Product } from './catalogue'
import { stylesheet } from './css'
import { cartDrawer, cartLine, filters, footer, header, imageTag, productGrid, promoCarousel, quickView, reviewList, sortSelect, toast } from './templates'

const products = catalogue()
const bySlug = new Map(products.map((p) => [p.slug, p]))

function layout(title: string, main: string, tracker: string): string {
  return `<!doctype html>
<html lang="en" class="h-full bg-white">
<head>
<meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · North &amp; Field</title>
<meta name="description" content="Clothes, shoes and things for the home, made to last.">
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/shop.css">
<script defer src="/assets/app.js"></script>
${tracker}
</head>
<body class="h-full text-gray-900">
${header(0)}
${main}
${cartDrawer()}
<div id="toasts" aria-live="assertive" class="pointer-events-none fixed inset-x-0 bottom-0 z-50 flex flex-col items-end gap-2 px-4 py-6 sm:p-6"></div>
${footer()}
</body>
</html>`
}

function listing(title: string, list: Product[], promos: boolean, tracker: string): string {
  return layout(
    title,
    `${promos ? promoCarousel() : ''}
<main class="mx-auto max-w-7xl px-4 sm:px-6 lg:px-8" data-category="${title}">
  <div class="flex items-baseline justify-between border-b border-gray-200 pb-6 pt-16"><h1 class="text-3xl font-bold tracking-tight text-gray-900">${title}</h1><p class="text-sm text-gray-500">${list.length} products</p></div>
  <div class="flex gap-x-8 pt-6">
    ${filters()}
    <section class="flex-1" aria-labelledby="products-heading"><h2 id="products-heading" class="sr-only">Products</h2>${sortSelect()}
      <div id="grid" class="mt-6 grid grid-cols-2 gap-x-4 gap-y-8 sm:grid-cols-3 lg:grid-cols-4">${productGrid(list.slice(0, FIRST_PAGE))}</div>
      <div class="mt-10 flex justify-center"><button type="button" id="load-more" class="rounded-md bg-white px-6 py-2.5 text-sm font-semibold text-gray-900 shadow-sm ring-1 ring-inset ring-gray-300 hover:bg-gray-50">Load more</button></div>
    </section>
  </div>
  <section id="recommendations" class="mt-16" aria-label="Recommended for you"></section>
</main>`,
    tracker,
  )
}

function productPage(product: Product, tracker: string): string {
  const related = products.filter((p) => p.category === product.category && p.id !== product.id).slice(0, 8)
  return layout(
    product.name,
    `<main class="mx-auto max-w-7xl px-4 pt-10 sm:px-6 lg:px-8" data-product="${product.id}">
  <nav aria-label="Breadcrumb"><ol role="list" class="flex items-center gap-2 text-sm text-gray-500"><li><a href="/" class="hover:text-gray-700">Home</a></li><li>/</li><li><a href="/c/${slugify(product.category)}" class="hover:text-gray-700">${product.category}</a></li><li>/</li><li class="font-medium text-gray-900">${product.name}</li></ol></nav>
  <div class="mt-8 grid grid-cols-1 gap-x-8 gap-y-10 lg:grid-cols-2">
    <div><div id="main-image" class="aspect-[3/4] overflow-hidden rounded-lg bg-gray-100">${imageTag(product, 1, 'h-full w-full object-cover object-center')}</div>
      <div class="mt-4 grid grid-cols-4 gap-4">${[1, 2, 3, 4].map((n) => `<button type="button" class="aspect-square overflow-hidden rounded-md bg-gray-100 ${n === 1 ? 'ring-2 ring-indigo-500' : 'ring-1 ring-gray-200'}" data-thumb="${n}">${imageTag(product, n, 'h-full w-full object-cover')}</button>`).join('')}</div></div>
    <div><p class="text-sm uppercase tracking-wide text-gray-500">${product.brand}</p><h1 class="mt-1 text-3xl font-bold tracking-tight text-gray-900">${product.name}</h1>
      <p class="mt-3 text-3xl tracking-tight text-gray-900">${money(product.price)}${product.compareAt ? ` <s class="text-lg text-gray-400">${money(product.compareAt)}</s>` : ''}</p>
      <div class="mt-6"><h3 class="text-sm font-medium text-gray-900">Colour</h3><div class="mt-3 flex gap-3">${product.colours.map((c, i) => `<button type="button" class="h-8 w-8 rounded-full border border-black/10 swatch-${c.toLowerCase()} ${i === 0 ? 'ring-2 ring-indigo-500' : ''}" aria-label="${c}" data-colour="${c}"></button>`).join('')}</div></div>
      <div class="mt-8"><div class="flex items-center justify-between"><h3 class="text-sm font-medium text-gray-900">Size</h3><a href="/size-guide" class="text-sm font-medium text-indigo-600 hover:text-indigo-500">Size guide</a></div><div class="mt-3 grid grid-cols-4 gap-3">${product.sizes.map((s) => `<button type="button" class="rounded-md border border-gray-200 bg-white px-4 py-3 text-sm font-medium uppercase text-gray-900 shadow-sm hover:bg-gray-50" data-size="${s}">${s}</button>`).join('')}</div></div>
      <button type="button" class="mt-8 flex w-full items-center justify-center rounded-md bg-indigo-600 px-8 py-3 text-base font-medium text-white hover:bg-indigo-700" data-add-to-cart="${product.id}">Add to cart</button>
      <div class="mt-10 divide-y divide-gray-200 border-t border-gray-200">${['Details', 'Materials and care', 'Shipping and returns'].map((t, i) => `<div class="py-6"><button type="button" class="flex w-full items-center justify-between text-left text-sm font-medium text-gray-900" data-accordion="${i}">${t}<span class="text-gray-400">+</span></button><div class="mt-4 hidden text-sm text-gray-600" data-panel="${i}">${i === 1 ? product.material + '. Machine wash cold, line dry.' : i === 2 ? 'Free shipping over €60. Returns within 30 days, free of charge.' : 'Cut for a relaxed fit. The model is 183 cm and wears size M.'}</div></div>`).join('')}</div>
    </div>
  </div>
  <section class="mt-16 border-t border-gray-200 pt-10" aria-labelledby="reviews-heading"><h2 id="reviews-heading" class="text-lg font-medium text-gray-900">Reviews (${product.reviews})</h2><div id="reviews" class="mt-6 divide-y divide-gray-200">${reviewList(reviewsOf(product, 8))}</div><button type="button" id="more-reviews" class="mt-6 text-sm font-semibold text-indigo-600 hover:text-indigo-500">Show more reviews</button></section>
  <section class="mt-16" aria-labelledby="related-heading"><h2 id="related-heading" class="text-xl font-bold text-gray-900">You may also like</h2><div class="mt-6 grid grid-cols-2 gap-x-4 gap-y-8 sm:grid-cols-4">${productGrid(related)}</div></section>
</main>`,
    tracker,
  )
}

const field = (id: string, label: string, type = 'text', autocomplete = id) =>
  `<div><label for="${id}" class="block text-sm font-medium text-gray-700">${label}</label><input type="${type}" id="${id}" name="${id}" autocomplete="${autocomplete}" class="mt-1 block w-full rounded-md border-0 px-3 py-2 text-sm text-gray-900 shadow-sm ring-1 ring-inset ring-gray-300 focus:ring-2 focus:ring-inset focus:ring-indigo-600"></div>`

function checkout(tracker: string): string {
  return layout(
    'Checkout',
    `<main class="mx-auto max-w-7xl px-4 pt-16 sm:px-6 lg:px-8"><h1 class="text-3xl font-bold tracking-tight text-gray-900">Checkout</h1>
  <form id="checkout" class="mt-10 grid grid-cols-1 gap-x-12 gap-y-10 lg:grid-cols-2" onsubmit="return false">
    <div class="space-y-8"><fieldset class="space-y-3"><legend class="text-lg font-medium text-gray-900">Contact</legend>${field('email', 'Email address', 'email')}${field('tel', 'Phone', 'tel')}</fieldset>
      <fieldset class="space-y-3"><legend class="text-lg font-medium text-gray-900">Shipping address</legend>${field('given-name', 'First name')}${field('family-name', 'Last name')}${field('street-address', 'Address')}${field('address-level2', 'City')}${field('postal-code', 'Postal code')}<div><label for="country" class="block text-sm font-medium text-gray-700">Country</label><select id="country" class="mt-1 block w-full rounded-md border-0 py-2 pl-3 text-sm ring-1 ring-inset ring-gray-300">${['Germany', 'France', 'Netherlands', 'Austria', 'Italy', 'Spain'].map((c) => `<option>${c}</option>`).join('')}</select></div></fieldset>
      <fieldset class="space-y-3"><legend class="text-lg font-medium text-gray-900">Payment</legend>${field('cc-number', 'Card number', 'text', 'cc-number')}${field('cc-exp', 'Expiration date (MM/YY)', 'text', 'cc-exp')}${field('cc-csc', 'CVC', 'text', 'cc-csc')}</fieldset></div>
    <div><h2 class="text-lg font-medium text-gray-900">Order summary</h2><ul id="summary" role="list" class="mt-4 divide-y divide-gray-200 rounded-lg border border-gray-200 bg-white shadow-sm"></ul>
      <div class="mt-6 flex justify-between text-base font-medium text-gray-900"><p>Total</p><p id="total">€0.00</p></div>
      <button type="submit" id="place-order" class="mt-6 w-full rounded-md bg-indigo-600 px-4 py-3 text-base font-medium text-white shadow-sm hover:bg-indigo-700">Place order</button></div>
  </form></main>`,
    tracker,
  )
}

/** The page at `path`, or null for a path the shop does not have. */
export function shopPage(path: string, tracker: string): string | null {
  if (path === '/') return listing('New arrivals', products, true, tracker)
  const category = path.match(/^\/c\/([a-z-]+)$/)?.[1]
  if (category === 'sale') return listing('Sale', products.filter((p) => p.compareAt), false, tracker)
  const name = CATEGORIES.find((c) => slugify(c) === category)
  if (name) return listing(name, products.filter((p) => p.category === name), false, tracker)
  const product = bySlug.get(path.match(/^\/product\/([a-z0-9-]+)$/)?.[1] ?? '')
  if (product) return productPage(product, tracker)
  if (path === '/checkout') return checkout(tracker)
  return null
}

/** The stylesheet for everything the shop renders: every page, and every card the script may add. */
export function shopStylesheet(): string {
  const pages = ['/', '/checkout', `/product/${products[0].slug}`].map((p) => shopPage(p, '') ?? '').join('')
  return stylesheet(pages + productGrid(products) + cartLine(products[0], 1) + toast(products[0]) + quickView(products[0]))
}

export const productSlugs = (category?: string) => products.filter((p) => !category || p.category === category).map((p) => p.slug)
