/**
 * The bench shop's stylesheet, built the way a utility-CSS framework builds one: a reset, then one
 * rule for each class the pages use (responsive and state variants in their media queries and
 * pseudo-classes). A recorder inlines it into every full snapshot, so its size and shape matter.
 */
const PALETTE: Record<string, Record<string, string>> = {
  gray: { 50: '#f9fafb', 100: '#f3f4f6', 200: '#e5e7eb', 300: '#d1d5db', 400: '#9ca3af', 500: '#6b7280', 600: '#4b5563', 700: '#374151', 800: '#1f2937', 900: '#111827' },
  indigo: { 50: '#eef2ff', 100: '#e0e7ff', 500: '#6366f1', 600: '#4f46e5', 700: '#4338ca' },
  rose: { 500: '#f43f5e', 600: '#e11d48' },
  amber: { 400: '#fbbf24' },
  sky: { 500: '#0ea5e9' },
}
const SWATCHES: Record<string, string> = {
  sand: '#d6c7a1', navy: '#1e3a5f', olive: '#708238', black: '#111111', ecru: '#f3efe0', rust: '#b7410e',
  sage: '#9caf88', charcoal: '#36454f', sky: '#87ceeb', burgundy: '#800020', oat: '#dfd7c8', forest: '#228b22',
}
const SIZES: Record<string, string> = { xs: '0.75rem', sm: '0.875rem', base: '1rem', lg: '1.125rem', xl: '1.25rem', '2xl': '1.5rem', '3xl': '1.875rem' }
const LINE: Record<string, string> = { xs: '1rem', sm: '1.25rem', base: '1.5rem', lg: '1.75rem', xl: '1.75rem', '2xl': '2rem', '3xl': '2.25rem' }
const WEIGHTS: Record<string, string> = { normal: '400', medium: '500', semibold: '600', bold: '700' }
const BREAKPOINTS: Record<string, string> = { sm: '640px', md: '768px', lg: '1024px' }
const STATES: Record<string, string> = { hover: ':hover', focus: ':focus', 'focus-visible': ':focus-visible', 'group-hover': '' }

const space = (n: string) => (n === 'px' ? '1px' : n === 'full' ? '100%' : n === 'screen' ? '100vw' : `${Number(n) / 4}rem`)
const colour = (name: string): string | undefined => {
  if (name === 'white') return '#fff'
  if (name === 'black') return '#000'
  if (name === 'transparent') return 'transparent'
  const [base, alpha] = name.split('/')
  const [family, shade] = base.split('-')
  const hex = base === 'white' ? '#ffffff' : base === 'black' ? '#000000' : PALETTE[family]?.[shade]
  if (!hex || !alpha) return hex
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16))
  return `rgb(${r} ${g} ${b} / ${Number(alpha) / 100})`
}

const STATIC: Record<string, string> = {
  block: 'display:block', hidden: 'display:none', flex: 'display:flex', 'inline-flex': 'display:inline-flex', grid: 'display:grid',
  'flex-1': 'flex:1 1 0%', 'flex-col': 'flex-direction:column', 'flex-shrink-0': 'flex-shrink:0', 'items-center': 'align-items:center',
  'items-start': 'align-items:flex-start', 'items-end': 'align-items:flex-end', 'justify-between': 'justify-content:space-between', 'justify-center': 'justify-content:center',
  relative: 'position:relative', absolute: 'position:absolute', fixed: 'position:fixed', sticky: 'position:sticky', 'inset-0': 'inset:0',
  'inset-y-0': 'top:0;bottom:0', 'overflow-hidden': 'overflow:hidden', 'overflow-y-auto': 'overflow-y:auto', 'rounded': 'border-radius:.25rem',
  'rounded-md': 'border-radius:.375rem', 'rounded-lg': 'border-radius:.5rem', 'rounded-xl': 'border-radius:.75rem', 'rounded-full': 'border-radius:9999px',
  border: 'border-width:1px', 'border-0': 'border-width:0', 'border-t': 'border-top-width:1px', 'border-b': 'border-bottom-width:1px',
  'border-transparent': 'border-color:transparent', uppercase: 'text-transform:uppercase', italic: 'font-style:italic', underline: 'text-decoration-line:underline',
  'text-center': 'text-align:center', 'tracking-tight': 'letter-spacing:-0.025em', 'tracking-wide': 'letter-spacing:0.025em',
  'shadow-sm': 'box-shadow:0 1px 2px 0 rgb(0 0 0 / .05)', shadow: 'box-shadow:0 1px 3px 0 rgb(0 0 0 / .1),0 1px 2px -1px rgb(0 0 0 / .1)',
  'shadow-lg': 'box-shadow:0 10px 15px -3px rgb(0 0 0 / .1),0 4px 6px -4px rgb(0 0 0 / .1)', 'shadow-xl': 'box-shadow:0 20px 25px -5px rgb(0 0 0 / .1),0 8px 10px -6px rgb(0 0 0 / .1)',
  'shadow-2xl': 'box-shadow:0 25px 50px -12px rgb(0 0 0 / .25)', 'object-cover': 'object-fit:cover', 'object-center': 'object-position:center',
  'aspect-[3/4]': 'aspect-ratio:3/4', 'sr-only': 'position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border-width:0',
  'pointer-events-none': 'pointer-events:none', 'pointer-events-auto': 'pointer-events:auto', transition: 'transition-property:color,background-color,border-color,opacity,box-shadow,transform;transition-timing-function:cubic-bezier(.4,0,.2,1);transition-duration:150ms',
  'transition-opacity': 'transition-property:opacity;transition-duration:150ms', 'duration-300': 'transition-duration:300ms', 'duration-700': 'transition-duration:700ms',
  'ease-in-out': 'transition-timing-function:cubic-bezier(.4,0,.2,1)', 'translate-x-full': 'transform:translateX(100%)', 'translate-x-0': 'transform:translateX(0)',
  'scale-105': 'transform:scale(1.05)', 'backdrop-blur': 'backdrop-filter:blur(8px)', 'ring-1': 'box-shadow:0 0 0 1px var(--ring-color,#d1d5db)',
  'ring-2': 'box-shadow:0 0 0 2px var(--ring-color,#4f46e5)', 'ring-inset': '--ring-inset:inset', outline: 'outline-style:solid', 'outline-2': 'outline-width:2px',
  'outline-offset-2': 'outline-offset:2px', 'outline-none': 'outline:2px solid transparent;outline-offset:2px', 'divide-y': '--divide:1', 'min-w-[1.25rem]': 'min-width:1.25rem',
  'max-w-7xl': 'max-width:80rem', 'max-w-3xl': 'max-width:48rem', 'max-w-xl': 'max-width:36rem', 'max-w-md': 'max-width:28rem', 'max-w-sm': 'max-width:24rem',
  'mx-auto': 'margin-left:auto;margin-right:auto', 'ml-auto': 'margin-left:auto', 'bg-gradient-to-r': 'background-image:linear-gradient(to right,var(--from),var(--to))',
  'from-indigo-600': '--from:#4f46e5', 'to-sky-500': '--to:#0ea5e9', 'z-30': 'z-index:30', 'z-40': 'z-index:40', 'z-50': 'z-index:50', 'opacity-0': 'opacity:0',
  'opacity-90': 'opacity:.9', 'opacity-100': 'opacity:1', 'w-screen': 'width:100vw', 'h-full': 'height:100%', 'w-full': 'width:100%', 'aspect-square': 'aspect-ratio:1/1',
}

function declarations(name: string): string | undefined {
  if (STATIC[name]) return STATIC[name]
  let m: RegExpMatchArray | null
  if ((m = name.match(/^-?(p|px|py|pt|pb|pl|pr|m|mx|my|mt|mb|ml|mr)-(\d+(?:\.5)?|px)$/))) {
    const sides: Record<string, string[]> = { p: ['padding'], px: ['padding-left', 'padding-right'], py: ['padding-top', 'padding-bottom'], pt: ['padding-top'], pb: ['padding-bottom'], pl: ['padding-left'], pr: ['padding-right'], m: ['margin'], mx: ['margin-left', 'margin-right'], my: ['margin-top', 'margin-bottom'], mt: ['margin-top'], mb: ['margin-bottom'], ml: ['margin-left'], mr: ['margin-right'] }
    const value = (name.startsWith('-') ? '-' : '') + space(m[2])
    return sides[m[1]].map((p) => `${p}:${value}`).join(';')
  }
  if ((m = name.match(/^(w|h|top|left|right|bottom|gap)-(\d+(?:\.5)?|px|full|screen)$/))) {
    const property = { w: 'width', h: 'height', top: 'top', left: 'left', right: 'right', bottom: 'bottom', gap: 'gap' }[m[1]]
    return `${property}:${space(m[2])}`
  }
  if ((m = name.match(/^space-y-(\d+(?:\.5)?)$/))) return `--space-y:${space(m[1])}`
  if ((m = name.match(/^grid-cols-(\d+)$/))) return `grid-template-columns:repeat(${m[1]},minmax(0,1fr))`
  if ((m = name.match(/^text-(xs|sm|base|lg|xl|2xl|3xl)$/))) return `font-size:${SIZES[m[1]]};line-height:${LINE[m[1]]}`
  if ((m = name.match(/^font-(normal|medium|semibold|bold)$/))) return `font-weight:${WEIGHTS[m[1]]}`
  if ((m = name.match(/^swatch-(\w+)$/)) && SWATCHES[m[1]]) return `background-color:${SWATCHES[m[1]]}`
  if ((m = name.match(/^(text|bg|border|ring|outline|placeholder|divide)-(.+)$/))) {
    const value = colour(m[2])
    if (!value) return undefined
    return { text: `color:${value}`, bg: `background-color:${value}`, border: `border-color:${value}`, ring: `--ring-color:${value}`, outline: `outline-color:${value}`, placeholder: `color:${value}`, divide: `border-color:${value}` }[m[1]]
  }
  return undefined
}

const selectorOf = (name: string) => '.' + name.replace(/[:/.[\]]/g, (c) => `\\${c}`)

function rule(className: string): string | undefined {
  const parts = className.split(':')
  const base = parts.pop()!
  const body = declarations(base)
  if (!body) return undefined
  let selector = selectorOf(className)
  let media: string | undefined
  for (const variant of parts) {
    if (BREAKPOINTS[variant]) media = `@media (min-width: ${BREAKPOINTS[variant]})`
    else if (variant === 'group-hover') selector = `.group:hover ${selector}`
    else if (variant === 'placeholder') selector += '::placeholder'
    else if (STATES[variant] !== undefined) selector += STATES[variant]
    else return undefined
  }
  const css = `${selector} { ${body.split(';').join('; ')}; }`
  return media ? `${media} { ${css} }` : css
}

const RESET = `*,::before,::after{box-sizing:border-box;border-width:0;border-style:solid;border-color:#e5e7eb}
html{line-height:1.5;-webkit-text-size-adjust:100%;tab-size:4;font-family:ui-sans-serif,system-ui,sans-serif,"Apple Color Emoji","Segoe UI Emoji";font-feature-settings:normal}
body{margin:0;line-height:inherit}
h1,h2,h3,h4,h5,h6{font-size:inherit;font-weight:inherit}
a{color:inherit;text-decoration:inherit}
b,strong{font-weight:bolder}
button,input,optgroup,select,textarea{font-family:inherit;font-size:100%;font-weight:inherit;line-height:inherit;color:inherit;margin:0;padding:0}
button,select{text-transform:none}
button,[type=button],[type=reset],[type=submit]{-webkit-appearance:button;background-color:transparent;background-image:none}
blockquote,dl,dd,h1,h2,h3,h4,h5,h6,hr,figure,p,pre{margin:0}
ol,ul,menu{list-style:none;margin:0;padding:0}
img,svg,video,canvas,audio,iframe,embed,object{display:block;vertical-align:middle}
img,video{max-width:100%;height:auto}
[hidden]{display:none}
.space-y-1\\.5>:not([hidden])~:not([hidden]){margin-top:.375rem}
.space-y-3>:not([hidden])~:not([hidden]){margin-top:.75rem}
.space-y-8>:not([hidden])~:not([hidden]){margin-top:2rem}
.divide-y>:not([hidden])~:not([hidden]){border-top-width:1px}
@keyframes toast-in{from{opacity:0;transform:translateY(.5rem)}to{opacity:1;transform:translateY(0)}}
.toast{animation:toast-in .2s ease-out}`

/** The stylesheet for every class in `html` (unknown ones are left out, as a purging build would). */
export function stylesheet(html: string): string {
  const classes = new Set<string>()
  for (const [, list] of html.matchAll(/class="([^"]*)"/g)) for (const name of list.split(/\s+/)) if (name) classes.add(name)
  const rules = [...classes].sort().map(rule).filter((r): r is string => r !== undefined)
  return `${RESET}\n${rules.join('\n')}\n`
}
