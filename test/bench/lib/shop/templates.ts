import { BRANDS, CATEGORIES, COLOURS, money, slugify, type Product, type Review } from './catalogue'

/**
 * The bench shop's markup, written the way utility-class shops are (long `class` lists, inline SVG
 * icons, responsive image sets), because that is what a recorder serializes. Used by the server for
 * the first render and by the page's script for every re-render.
 */
const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

const ICONS = {
  heart: 'M21 8.25c0-2.485-2.099-4.5-4.688-4.5-1.935 0-3.597 1.126-4.312 2.733-.715-1.607-2.377-2.733-4.313-2.733C5.1 3.75 3 5.765 3 8.25c0 7.22 9 12 9 12s9-4.78 9-12z',
  star: 'M10.868 2.884c-.321-.772-1.415-.772-1.736 0l-1.83 4.401-4.753.381c-.833.067-1.171 1.107-.536 1.651l3.62 3.102-1.106 4.637c-.194.813.691 1.456 1.405 1.02L10 15.591l4.069 2.485c.713.436 1.598-.207 1.404-1.02l-1.106-4.637 3.62-3.102c.635-.544.297-1.584-.536-1.65l-4.752-.382-1.831-4.401z',
  bag: 'M15.75 10.5V6a3.75 3.75 0 10-7.5 0v4.5m11.356-1.993l1.263 12c.07.665-.45 1.243-1.119 1.243H4.25a1.125 1.125 0 01-1.12-1.243l1.264-12A1.125 1.125 0 015.513 7.5h12.974c.576 0 1.059.435 1.119 1.007zM8.625 10.5a.375.375 0 11-.75 0 .375.375 0 01.75 0zm7.5 0a.375.375 0 11-.75 0 .375.375 0 01.75 0z',
  search: 'M21 21l-5.197-5.197m0 0A7.5 7.5 0 105.196 5.196a7.5 7.5 0 0010.607 10.607z',
  user: 'M15.75 6a3.75 3.75 0 11-7.5 0 3.75 3.75 0 017.5 0zM4.501 20.118a7.5 7.5 0 0114.998 0A17.933 17.933 0 0112 21.75c-2.676 0-5.216-.584-7.499-1.632z',
  close: 'M6 18L18 6M6 6l12 12',
  chevron: 'M19.5 8.25l-7.5 7.5-7.5-7.5',
  truck: 'M8.25 18.75a1.5 1.5 0 01-3 0m3 0a1.5 1.5 0 00-3 0m3 0h6m-9 0H3.375a1.125 1.125 0 01-1.125-1.125V14.25m17.25 4.5a1.5 1.5 0 01-3 0m3 0a1.5 1.5 0 00-3 0m3 0h1.125c.621 0 1.129-.504 1.09-1.124a17.902 17.902 0 00-3.213-9.193 2.056 2.056 0 00-1.58-.86H14.25M16.5 18.75h-2.25m0-11.177v-.958c0-.568-.422-1.048-.987-1.106a48.554 48.554 0 00-10.026 0 1.106 1.106 0 00-.987 1.106v7.635m12-6.677v6.677m0 4.5v-4.5m0 0h-12',
}

const icon = (name: keyof typeof ICONS, classes = 'h-6 w-6') =>
  `<svg xmlns="http://www.w3.org/2000/svg" fill="none" viewBox="0 0 24 24" stroke-width="1.5" stroke="currentColor" aria-hidden="true" class="${classes}"><path stroke-linecap="round" stroke-linejoin="round" d="${ICONS[name]}"></path></svg>`

const stars = (rating: number) =>
  Array.from(
    { length: 5 },
    (_, i) =>
      `<svg viewBox="0 0 20 20" fill="currentColor" aria-hidden="true" class="h-4 w-4 flex-shrink-0 ${i < Math.round(rating) ? 'text-amber-400' : 'text-gray-200'}"><path fill-rule="evenodd" d="${ICONS.star}" clip-rule="evenodd"></path></svg>`,
  ).join('')

const image = (product: Product, n: number, width: number) => `/img/products/${product.slug}-${n}`

export const imageTag = (product: Product, n: number, classes: string) =>
  `<img src="${image(product, n, 480)}-480w.webp" srcset="${image(product, n, 480)}-480w.webp 480w, ${image(product, n, 960)}-960w.webp 960w, ${image(product, n, 1440)}-1440w.webp 1440w" sizes="(min-width: 1024px) 25vw, (min-width: 640px) 33vw, 50vw" alt="${escape(product.name)} in ${escape(product.colours[0])}" loading="lazy" decoding="async" class="${classes}">`

export function productCard(product: Product): string {
  const sale = product.compareAt ? Math.round((1 - product.price / product.compareAt) * 100) : 0
  return `<article class="group relative flex flex-col overflow-hidden rounded-lg border border-gray-200 bg-white transition hover:shadow-lg" data-product-id="${product.id}" data-testid="product-card">
  <a href="/product/${product.slug}" class="aspect-[3/4] block overflow-hidden bg-gray-100 group-hover:opacity-90" data-quick-view="${product.id}">${imageTag(product, 1, 'h-full w-full object-cover object-center transition duration-300 group-hover:scale-105')}</a>
  ${sale ? `<span class="absolute left-2 top-2 rounded-full bg-rose-600 px-2 py-0.5 text-xs font-semibold text-white">-${sale}%</span>` : ''}${product.badge ? `<span class="absolute left-2 ${sale ? 'top-9' : 'top-2'} rounded-full bg-gray-900/80 px-2 py-0.5 text-xs font-medium text-white">${product.badge}</span>` : ''}
  <button type="button" aria-label="Add ${escape(product.name)} to your wishlist" class="absolute right-2 top-2 rounded-full bg-white/80 p-1.5 text-gray-400 backdrop-blur hover:text-rose-500 focus:outline-none focus-visible:ring-2 focus-visible:ring-rose-500" data-wishlist="${product.id}">${icon('heart', 'h-5 w-5')}</button>
  <div class="flex flex-1 flex-col space-y-1.5 p-4">
    <p class="text-xs font-medium uppercase tracking-wide text-gray-500">${escape(product.brand)}</p>
    <h3 class="text-sm font-medium text-gray-900"><a href="/product/${product.slug}" class="hover:underline">${escape(product.name)}</a></h3>
    <div class="flex items-center" title="${product.rating} out of 5 stars">${stars(product.rating)}<span class="ml-1 text-xs text-gray-500">(${product.reviews})</span></div>
    <ul class="flex gap-1" aria-label="Colours">${product.colours.map((c) => `<li class="h-3 w-3 rounded-full border border-black/10 swatch-${c.toLowerCase()}" title="${c}"></li>`).join('')}</ul>
    <div class="flex flex-1 items-end justify-between pt-2">
      <p class="text-base font-semibold text-gray-900">${money(product.price)}${product.compareAt ? ` <s class="text-sm font-normal text-gray-400">${money(product.compareAt)}</s>` : ''}</p>
      <button type="button" class="rounded-md bg-indigo-600 px-3 py-1.5 text-sm font-semibold text-white shadow-sm hover:bg-indigo-500 focus-visible:outline focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-indigo-600" data-add-to-cart="${product.id}">Add to cart</button>
    </div>
  </div>
</article>`
}

export const productGrid = (products: Product[]) => products.map(productCard).join('\n')

export function header(cartCount: number): string {
  return `<div class="bg-gray-900 px-4 py-2 text-center text-sm font-medium text-white">Free shipping on orders over €60 · 30-day returns</div>
<header class="sticky top-0 z-30 border-b border-gray-200 bg-white/95 backdrop-blur">
  <nav class="mx-auto flex max-w-7xl items-center justify-between gap-6 px-4 py-3 sm:px-6 lg:px-8" aria-label="Top">
    <a href="/" class="text-xl font-bold tracking-tight text-gray-900">North&nbsp;&amp;&nbsp;Field</a>
    <ul class="hidden items-center gap-6 text-sm font-medium text-gray-700 lg:flex">${CATEGORIES.map((c) => `<li><a href="/c/${slugify(c)}" class="hover:text-indigo-600">${c}</a></li>`).join('')}<li><a href="/c/sale" class="text-rose-600 hover:text-rose-500">Sale</a></li></ul>
    <form class="relative hidden flex-1 md:block" role="search" onsubmit="return false"><label for="search" class="sr-only">Search</label><span class="pointer-events-none absolute inset-y-0 left-0 flex items-center pl-3 text-gray-400">${icon('search', 'h-5 w-5')}</span><input id="search" name="q" type="search" autocomplete="off" placeholder="Search products, brands and more" class="block w-full rounded-md border-0 py-2 pl-10 pr-3 text-sm text-gray-900 ring-1 ring-inset ring-gray-300 placeholder:text-gray-400 focus:ring-2 focus:ring-inset focus:ring-indigo-600"></form>
    <div class="flex items-center gap-4">
      <a href="/account" class="text-gray-500 hover:text-gray-700" aria-label="Account">${icon('user')}</a>
      <button type="button" id="cart-button" class="group relative -m-2 flex items-center p-2 text-gray-500 hover:text-gray-700" aria-label="Cart">${icon('bag')}<span id="cart-count" class="ml-1 min-w-[1.25rem] rounded-full bg-indigo-600 px-1.5 text-center text-xs font-semibold text-white">${cartCount}</span></button>
    </div>
  </nav>
</header>`
}

const PROMOS = ['New season: linen for warm days', 'Up to 40% off outdoor gear', 'Members get free express delivery']

export const promoCarousel = () =>
  `<section class="relative mx-auto mt-6 max-w-7xl overflow-hidden rounded-xl bg-gradient-to-r from-indigo-600 to-sky-500 px-4 sm:px-6 lg:px-8" aria-label="Promotions" id="promos">${PROMOS.map(
    (text, i) =>
      `<div class="promo-slide py-10 text-white transition-opacity duration-700 ${i === 0 ? 'opacity-100' : 'absolute inset-0 px-8 opacity-0'}" data-slide="${i}"><h2 class="text-3xl font-bold tracking-tight">${text}</h2><p class="mt-2 max-w-xl text-indigo-100">Shop the edit before it is gone.</p><a href="/c/sale" class="mt-4 inline-flex items-center rounded-md bg-white px-4 py-2 text-sm font-semibold text-indigo-700 shadow hover:bg-indigo-50">Shop now</a></div>`,
  ).join('')}<div class="absolute bottom-3 right-4 flex gap-2">${PROMOS.map((_, i) => `<button type="button" aria-label="Slide ${i + 1}" class="promo-dot h-2 w-2 rounded-full ${i === 0 ? 'bg-white' : 'bg-white/40'}" data-dot="${i}"></button>`).join('')}</div></section>`

const checkbox = (group: string, value: string) =>
  `<li class="flex items-center"><input id="filter-${group}-${slugify(value)}" name="${group}" value="${escape(value)}" type="checkbox" class="h-4 w-4 rounded border-gray-300 text-indigo-600 focus:ring-indigo-500"><label for="filter-${group}-${slugify(value)}" class="ml-3 text-sm text-gray-600">${escape(value)}</label></li>`

export const filters = () => `<aside class="hidden w-60 flex-shrink-0 lg:block" aria-label="Filters"><form id="filters" class="space-y-8 divide-y divide-gray-200">
  <fieldset><legend class="text-sm font-semibold text-gray-900">Brand</legend><ul class="mt-4 space-y-3">${BRANDS.map((b) => checkbox('brand', b)).join('')}</ul></fieldset>
  <fieldset class="pt-6"><legend class="text-sm font-semibold text-gray-900">Colour</legend><ul class="mt-4 space-y-3">${COLOURS.map((c) => checkbox('colour', c)).join('')}</ul></fieldset>
  <fieldset class="pt-6"><legend class="text-sm font-semibold text-gray-900">Price</legend><ul class="mt-4 space-y-3">${['Under €25', '€25 to €50', '€50 to €100', '€100 to €200', 'Over €200'].map((p) => checkbox('price', p)).join('')}</ul></fieldset>
  <fieldset class="pt-6"><legend class="text-sm font-semibold text-gray-900">Rating</legend><ul class="mt-4 space-y-3">${['4 stars & up', '3 stars & up'].map((p) => checkbox('rating', p)).join('')}</ul></fieldset>
</form></aside>`

export const sortSelect = () =>
  `<div class="flex items-center justify-between border-b border-gray-200 pb-4"><p class="text-sm text-gray-500" id="result-count"></p><label class="flex items-center gap-2 text-sm text-gray-700">Sort<select id="sort" class="rounded-md border-0 py-1.5 pl-3 pr-8 text-sm ring-1 ring-inset ring-gray-300 focus:ring-2 focus:ring-indigo-600"><option value="popular">Most popular</option><option value="rating">Best rating</option><option value="newest">Newest</option><option value="price-asc">Price: low to high</option><option value="price-desc">Price: high to low</option></select></label></div>`

export const cartDrawer = () => `<div id="cart-drawer" class="pointer-events-none fixed inset-0 z-40 overflow-hidden" aria-labelledby="cart-title" role="dialog" aria-modal="true">
  <div id="cart-backdrop" class="absolute inset-0 bg-gray-500/75 opacity-0 transition-opacity duration-300"></div>
  <div id="cart-panel" class="pointer-events-auto fixed inset-y-0 right-0 flex w-screen max-w-md translate-x-full flex-col bg-white shadow-xl transition duration-300 ease-in-out">
    <div class="flex items-start justify-between border-b border-gray-200 px-4 py-6 sm:px-6"><h2 id="cart-title" class="text-lg font-medium text-gray-900">Shopping cart</h2><button type="button" id="cart-close" class="-m-2 p-2 text-gray-400 hover:text-gray-500" aria-label="Close panel">${icon('close')}</button></div>
    <ul id="cart-lines" role="list" class="-my-6 flex-1 divide-y divide-gray-200 overflow-y-auto px-4 py-6 sm:px-6"></ul>
    <div class="border-t border-gray-200 px-4 py-6 sm:px-6"><div class="flex justify-between text-base font-medium text-gray-900"><p>Subtotal</p><p id="cart-subtotal">€0.00</p></div><p class="mt-0.5 text-sm text-gray-500">Shipping and taxes calculated at checkout.</p><a href="/checkout" class="mt-6 flex items-center justify-center rounded-md border border-transparent bg-indigo-600 px-6 py-3 text-base font-medium text-white shadow-sm hover:bg-indigo-700">Checkout</a></div>
  </div>
</div>`

export const cartLine = (product: Product, quantity: number) =>
  `<li class="flex py-6" data-line="${product.id}"><div class="h-24 w-24 flex-shrink-0 overflow-hidden rounded-md border border-gray-200">${imageTag(product, 1, 'h-full w-full object-cover object-center')}</div><div class="ml-4 flex flex-1 flex-col"><div class="flex justify-between text-base font-medium text-gray-900"><h3><a href="/product/${product.slug}">${escape(product.name)}</a></h3><p class="ml-4">${money(product.price * quantity)}</p></div><p class="mt-1 text-sm text-gray-500">${escape(product.colours[0])} · ${escape(product.sizes[Math.min(2, product.sizes.length - 1)])}</p><div class="flex flex-1 items-end justify-between text-sm"><div class="flex items-center gap-2"><button type="button" class="rounded border border-gray-300 px-2 text-gray-600 hover:bg-gray-50" data-decrement="${product.id}">−</button><span class="text-gray-700">Qty ${quantity}</span><button type="button" class="rounded border border-gray-300 px-2 text-gray-600 hover:bg-gray-50" data-increment="${product.id}">+</button></div><button type="button" class="font-medium text-indigo-600 hover:text-indigo-500" data-remove="${product.id}">Remove</button></div></div></li>`

export const toast = (product: Product) =>
  `<div class="toast pointer-events-auto flex w-full max-w-sm items-center gap-3 overflow-hidden rounded-lg bg-white p-4 shadow-lg ring-1 ring-black/5 transition" role="status">${imageTag(product, 1, 'h-12 w-12 rounded object-cover')}<div class="flex-1"><p class="text-sm font-medium text-gray-900">Added to your cart</p><p class="mt-1 text-sm text-gray-500">${escape(product.name)} · ${money(product.price)}</p></div></div>`

export const quickView = (product: Product) => `<div id="quick-view" class="fixed inset-0 z-50 flex items-center justify-center bg-gray-900/60 p-4" role="dialog" aria-modal="true"><div class="relative grid w-full max-w-3xl grid-cols-1 gap-6 overflow-hidden rounded-xl bg-white p-6 shadow-2xl sm:grid-cols-2">
  <button type="button" class="absolute right-3 top-3 text-gray-400 hover:text-gray-600" data-close-quick-view aria-label="Close">${icon('close')}</button>
  <div class="aspect-[3/4] overflow-hidden rounded-lg bg-gray-100">${imageTag(product, 1, 'h-full w-full object-cover')}</div>
  <div class="flex flex-col"><p class="text-sm uppercase tracking-wide text-gray-500">${escape(product.brand)}</p><h2 class="mt-1 text-2xl font-bold text-gray-900">${escape(product.name)}</h2><div class="mt-2 flex items-center">${stars(product.rating)}<span class="ml-2 text-sm text-gray-500">${product.reviews} reviews</span></div><p class="mt-4 text-2xl text-gray-900">${money(product.price)}</p><p class="mt-4 text-sm text-gray-600">${escape(product.material)}. Designed to last and made in small batches.</p>
  <div class="mt-6 grid grid-cols-4 gap-2">${product.sizes.map((s) => `<button type="button" class="rounded-md border border-gray-200 py-2 text-sm font-medium uppercase text-gray-900 hover:bg-gray-50" data-size="${escape(s)}">${escape(s)}</button>`).join('')}</div>
  <button type="button" class="mt-6 rounded-md bg-indigo-600 px-6 py-3 text-base font-medium text-white hover:bg-indigo-700" data-add-to-cart="${product.id}">Add to cart</button></div>
</div></div>`

export const reviewList = (reviews: Review[]) =>
  reviews
    .map(
      (r) =>
        `<article class="py-6"><div class="flex items-center gap-3"><div class="flex h-10 w-10 items-center justify-center rounded-full bg-gray-100 text-sm font-semibold text-gray-600">${escape(r.author[0])}</div><div><h4 class="text-sm font-bold text-gray-900">${escape(r.author)}</h4><div class="mt-1 flex items-center">${stars(r.rating)}</div></div><time datetime="${r.date}" class="ml-auto text-sm text-gray-500">${r.date}</time></div><h5 class="mt-4 text-sm font-semibold text-gray-900">${escape(r.title)}</h5><p class="mt-2 space-y-6 text-sm italic text-gray-600">${escape(r.text)}</p></article>`,
    )
    .join('')

export const footer = () =>
  `<footer class="mt-24 border-t border-gray-200 bg-gray-50" aria-labelledby="footer-heading"><h2 id="footer-heading" class="sr-only">Footer</h2><div class="mx-auto grid max-w-7xl grid-cols-2 gap-8 px-4 py-16 sm:px-6 md:grid-cols-4 lg:px-8">${[
    ['Shop', [...CATEGORIES, 'Gift cards', 'Sale']],
    ['Help', ['Shipping', 'Returns', 'Size guide', 'Order status', 'Contact us']],
    ['Company', ['About', 'Sustainability', 'Careers', 'Press', 'Stores']],
    ['Legal', ['Terms', 'Privacy', 'Cookies', 'Accessibility', 'Imprint']],
  ]
    .map(([title, links]) => `<div><h3 class="text-sm font-semibold text-gray-900">${title}</h3><ul role="list" class="mt-4 space-y-3">${(links as string[]).map((l) => `<li><a href="/${slugify(l)}" class="text-sm text-gray-500 hover:text-gray-900">${l}</a></li>`).join('')}</ul></div>`)
    .join('')}</div><div class="border-t border-gray-200 py-8 text-center text-xs text-gray-500">${icon('truck', 'mx-auto mb-2 h-5 w-5')}© 2026 North &amp; Field. All rights reserved.</div></footer>`
