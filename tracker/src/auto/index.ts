import type { Messages } from '../messages'
import type { Redaction } from '../redaction'
import type { AutomaticTrackingOptions, PageWindow } from '../types'
import { trackClicks } from './clicks'
import { trackConsole } from './console'
import { trackErrors } from './errors'
import { trackForms } from './forms'
import { trackNetwork } from './network'
import { trackPages } from './pages'

/** What automatic tracking reports to: the tracker's messages, and what it needs to know of the page. */
export interface AutoContext extends Pick<Messages, 'customEvent' | 'pageView' | 'navigation' | 'log' | 'networkError' | 'span' | 'error'> {
  win: PageWindow
  now(): number
  redaction: Redaction
  /** The tracker's own requests, never reported. */
  isOwnRequest(url: string): boolean
}

/** Installs each kind not switched off; returns what uninstalls them all. */
export function installAutomaticTracking(context: AutoContext, options: AutomaticTrackingOptions = {}): () => void {
  type Kind = keyof AutomaticTrackingOptions
  const on = (kind: Kind) => options[kind] !== false
  /** A tracker of two kinds, installed when either is on. */
  const either = (a: Kind, b: Kind, track: (context: AutoContext, a: boolean, b: boolean) => () => void) => (on(a) || on(b)) && track(context, on(a), on(b))
  const installed = [
    either('pageViews', 'navigation', trackPages),
    either('clicks', 'rageClicks', trackClicks),
    on('forms') && trackForms(context),
    on('console') && trackConsole(context),
    either('network', 'spans', trackNetwork),
    on('errors') && trackErrors(context),
  ].filter((undo): undo is () => void => !!undo)
  return () => installed.forEach((undo) => undo())
}
