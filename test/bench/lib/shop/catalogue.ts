/**
 * The bench shop's products: a seeded catalogue of a few hundred items, the same on every run, with
 * the fields a real shop's listing shows (brand, colours, price and sale price, rating, badges).
 * Shared by the server, which renders the pages, and by the page's own script, which re-renders
 * the grid when filters change.
 */
export function rng(seed: number): () => number {
  // mulberry32
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export interface Product {
  id: number
  slug: string
  name: string
  brand: string
  category: string
  colours: string[]
  price: number
  /** The price before a sale, when on sale. */
  compareAt: number | null
  rating: number
  reviews: number
  badge: 'New' | 'Bestseller' | 'Low stock' | null
  sizes: string[]
  material: string
}

/** How many cards a listing shows before "Load more", and how many each click adds. */
export const FIRST_PAGE = 144
export const PAGE_SIZE = 48

export const CATEGORIES = ['Women', 'Men', 'Home', 'Outdoor', 'Kids', 'Accessories'] as const

export const BRANDS = [
  'Northwind', 'Field & Fern', 'Atelier Nord', 'Harbour Supply', 'Kestrel', 'Oak & Ivory', 'Marlow', 'Trailhead',
  'Juniper Lane', 'Copperline', 'Studio Vale', 'Saltmarsh', 'Aldergrove', 'Birchwood', 'Lumen & Co', 'Ridgeback',
]

const NOUNS: Record<(typeof CATEGORIES)[number], string[]> = {
  Women: ['Linen Shirt', 'Wrap Dress', 'Merino Cardigan', 'Wide-Leg Trousers', 'Denim Jacket', 'Silk Blouse', 'Midi Skirt', 'Trench Coat', 'Rib Knit Top', 'Ankle Boots'],
  Men: ['Oxford Shirt', 'Chino Trousers', 'Crew Neck Sweater', 'Quilted Vest', 'Selvedge Jeans', 'Polo Shirt', 'Field Jacket', 'Leather Sneakers', 'Flannel Overshirt', 'Wool Overcoat'],
  Home: ['Stoneware Mug', 'Linen Duvet Cover', 'Throw Blanket', 'Ceramic Vase', 'Cotton Bath Towel', 'Cast Iron Skillet', 'Table Lamp', 'Cushion Cover', 'Glass Carafe', 'Oak Serving Board'],
  Outdoor: ['Rain Shell', 'Down Jacket', 'Trail Runners', 'Daypack 24L', 'Insulated Bottle', 'Hiking Socks', 'Fleece Pullover', 'Camp Chair', 'Headlamp', 'Softshell Pants'],
  Kids: ['Puffer Jacket', 'Rain Boots', 'Organic Romper', 'Knit Beanie', 'Backpack', 'Pyjama Set', 'Hoodie', 'Canvas Sneakers', 'Dungarees', 'Swim Shorts'],
  Accessories: ['Leather Belt', 'Canvas Tote', 'Wool Scarf', 'Sunglasses', 'Card Holder', 'Baseball Cap', 'Weekender Bag', 'Watch Strap', 'Silk Scarf', 'Leather Gloves'],
}

const ADJECTIVES = ['Relaxed', 'Classic', 'Organic', 'Everyday', 'Recycled', 'Heavyweight', 'Lightweight', 'Essential', 'Cropped', 'Oversized', 'Slim', 'Heritage', 'Soft', 'Washed', 'Tailored']
export const COLOURS = ['Sand', 'Navy', 'Olive', 'Black', 'Ecru', 'Rust', 'Sage', 'Charcoal', 'Sky', 'Burgundy', 'Oat', 'Forest']
const MATERIALS = ['100% organic cotton', '55% linen, 45% cotton', '100% merino wool', 'Recycled polyester', 'Full-grain leather', 'Stoneware', 'European linen', 'Cotton twill']
const SIZES: Record<string, string[]> = {
  clothes: ['XS', 'S', 'M', 'L', 'XL', 'XXL'],
  shoes: ['37', '38', '39', '40', '41', '42', '43', '44', '45'],
  one: ['One size'],
}

export const slugify = (text: string) => text.toLowerCase().replace(/&/g, 'and').replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')

export function catalogue(count = 360, seed = 7): Product[] {
  const random = rng(seed)
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]
  return Array.from({ length: count }, (_, i) => {
    const category = CATEGORIES[i % CATEGORIES.length]
    const noun = pick(NOUNS[category])
    const name = `${pick(ADJECTIVES)} ${noun}`
    const price = Math.round((9 + random() * 240) * 10) / 10 - 0.1
    const onSale = random() < 0.25
    const sizes = /Boots|Sneakers|Runners/.test(noun) ? SIZES.shoes : ['Home', 'Accessories'].includes(category) ? SIZES.one : SIZES.clothes
    return {
      id: 1000 + i,
      slug: `${slugify(name)}-${1000 + i}`,
      name,
      brand: pick(BRANDS),
      category,
      colours: Array.from(new Set(Array.from({ length: 1 + Math.floor(random() * 4) }, () => pick(COLOURS)))),
      price: onSale ? Math.round(price * 0.8 * 10) / 10 - 0.1 : price,
      compareAt: onSale ? price : null,
      rating: Math.round((3 + random() * 2) * 10) / 10,
      reviews: Math.floor(random() * random() * 900),
      badge: random() < 0.7 ? null : pick(['New', 'Bestseller', 'Low stock'] as const),
      sizes,
      material: pick(MATERIALS),
    }
  })
}

const OPENINGS = ['Fits true to size', 'Really happy with this', 'Great quality for the price', 'Bought it in two colours', 'Not quite what I expected', 'Lovely fabric']
const MIDDLES = ['the stitching is neat and it washed well', 'the colour is a little darker than in the photos', 'it arrived quickly and was well packed', 'I sized up and it is perfect for layering', 'it wrinkles a bit but that is linen for you', 'it has kept its shape after months of wear']
const CLOSINGS = ['would buy again.', 'recommended!', 'five stars from me.', 'returned the first one for a smaller size.', 'my go-to now.', 'great for travel.']
const REVIEWERS = ['Anna K.', 'Marco B.', 'Priya S.', 'Tom H.', 'Lena W.', 'Yusuf A.', 'Claire D.', 'Jonas M.', 'Sofia R.', 'Daniel O.']

export interface Review {
  author: string
  rating: number
  date: string
  title: string
  text: string
}

export function reviewsOf(product: Product, count: number): Review[] {
  const random = rng(product.id)
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]
  return Array.from({ length: count }, (_, i) => ({
    author: pick(REVIEWERS),
    rating: Math.min(5, Math.max(1, Math.round(product.rating + random() * 2 - 1))),
    date: new Date(Date.UTC(2026, Math.floor(random() * 10), 1 + Math.floor(random() * 27))).toISOString().slice(0, 10),
    title: pick(OPENINGS),
    text: `${pick(OPENINGS)}: ${pick(MIDDLES)}, and ${pick(MIDDLES)}; ${pick(CLOSINGS)}${i % 3 === 0 ? ` ${pick(MIDDLES)[0].toUpperCase()}${pick(MIDDLES).slice(1)}.` : ''}`,
  }))
}

export const money = (value: number) => `€${value.toFixed(2)}`
