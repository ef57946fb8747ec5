/**
 * A parameter whose value is a credential, by its name: OAuth's tokens and codes (`#access_token=`,
 * `?code=`), signed links' signatures and keys, passwords, sessions (`;jsessionid=`), sign-on tickets.
 * Short words count as the whole name only (`key`, not `keyword`); long ones anywhere in it (`auth` in
 * `authorization`, not in `author`).
 */
const CREDENTIAL_PARAMETER = /([?#&;](code|key|sig|sid|pass|otp|ticket|[^\s?#&;=]*(token|secret|passw|pwd|signature|cred|api.?key|auth(?!or\b)|sess|jwt)[^\s?#&;=]*)=)[^\s?#&;]*/gi

/**
 * A URL, or text naming URLs (some of the browser's error messages repeat one as the page gave it),
 * as it may leave the page: without user names and passwords, and with the value of every credential
 * parameter replaced, in the query, in the fragment (where OAuth's implicit flow puts its tokens) and
 * in the path. Other parameters stay: they say which page it was. (A `URL` object is taken as its text.)
 */
export const withoutCredentials = (text: string | URL): string => String(text).replace(/\/\/[^\s/?#@]*@/g, '//').replace(CREDENTIAL_PARAMETER, '$1[redacted]')

/**
 * A parameter's value in a URL's query or fragment (a search box or a form sent by GET puts what was
 * typed there), unless the parameter says where a visit came from (a campaign, an ad's click); and a
 * query's bare word, a component without `=` (`?what+was+typed`).
 */
const PARAMETER_VALUE = /([?#&;](?!(utm_\w+|gclid|fbclid|msclkid|ref)=)[^\s?#&;=]*=|[?&](?=[^\s?#&;=]+([\s#&;]|$)))[^\s?#&;]*/gi

/** A URL with the value of every parameter but campaigns' replaced; the names say which page it was. */
export const withoutParameterValues = (url: string): string => url.replace(PARAMETER_VALUE, '$1[redacted]')

/** A URL in text (a message, a stack frame), its scheme in any case: up to a space, a quote or a parenthesis, without a frame's `:line:column`. */
export const URL_IN_TEXT = /https?:\/\/[^\s'"()<>]+?(?=(:\d+)*([\s'"()<>]|$))/gi

/**
 * A URL without its query and fragment (often tokens of any name), and without credentials. Of a URL
 * without a host (`mailto:`, `data:`, `blob:`), only the scheme: the rest is an address or the
 * content itself.
 */
export const withoutQuery = (url: string, base: string): string => {
  try {
    const { protocol, host, pathname } = new URL(url, base)
    url = host ? protocol + '//' + host + pathname : protocol
  } catch {
    url = url.split(/[?#]/)[0]
  }
  return withoutCredentials(url)
}
