import { listen } from '../dom'
import { withoutQuery } from '../urls'
import type { AutoContext } from '.'

/** Form submissions: which form and how many fields, never a value. */
export function trackForms(context: AutoContext): () => void {
  return listen(
    context.win.document,
    'submit',
    (event) => {
      const form = event.target as HTMLFormElement
      if (form?.tagName !== 'FORM') return
      context.customEvent('$form_submit', {
        // Attributes, not properties: a field named `id` would be what `form.id` gives.
        id: form.getAttribute('id') || undefined,
        name: form.getAttribute('name') ?? undefined,
        action: withoutQuery(form.getAttribute('action') ?? '', context.win.location.href),
        method: (form.getAttribute('method') ?? 'get').toLowerCase(),
        fields: form.elements.length,
      })
    },
    true,
  )
}
