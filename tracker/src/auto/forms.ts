import { idOf, listen, type Undo } from '../dom'
import { withoutQuery } from '../urls'
import type { AutoContext } from '.'

/** Form submissions: which form and how many fields, never a value. */
export function trackForms(context: AutoContext): Undo[] {
  return [listen(
    context.win,
    'submit',
    (event) => {
      const form = event.target as HTMLFormElement
      if (form?.tagName != 'FORM') return
      context.customEvent('$form_submit', {
        id: idOf(form),
        name: form.getAttribute('name') ?? undefined,
        action: withoutQuery(form.getAttribute('action') ?? '', form.baseURI),
        method: (form.getAttribute('method') ?? 'get').toLowerCase(),
        fields: form.elements.length,
      })
    },
    true,
  )]
}
