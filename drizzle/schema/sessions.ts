import { boolean, index, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'

/** A recorded browser session; created by the first request that names it. */
export const sessions = pgTable(
  'sessions',
  {
    projectId: projectId(),
    sessionId: text('session_id').notNull(),
    environment: text('environment').notNull(),
    endUserId: text('end_user_id'),
    startedAt: at('started_at').notNull(),
    lastActivityAt: at('last_activity_at').notNull(),
    endedAt: at('ended_at'),
    /**
     * True while `started_at` and `last_activity_at` are only the receipt time of the request that
     * created the session, which showed no activity (a replay chunk without a valid event, resent
     * from an outbox hours later); null otherwise. The first touch with activity replaces them.
     */
    timesAreReceipt: boolean('times_are_receipt'),
    entryUrl: text('entry_url'),
    /**
     * When the page of `entry_url` was loaded (its recording's meta event). Requests arrive out of
     * order (a page's chunks wait offline, or in the outbox for the next load): the earliest wins.
     */
    entryAt: at('entry_at'),
    referrer: text('referrer'),
    userAgent: text('user_agent'),
    browser: text('browser'),
    browserVersion: text('browser_version'),
    os: text('os'),
    osVersion: text('os_version'),
    deviceType: text('device_type'),
    deviceVendor: text('device_vendor'),
    deviceModel: text('device_model'),
    automaticProperties: jsonb('automatic_properties'),
    windowIds: text('window_ids').array().notNull().default([]),
    geo: jsonb('geo'),
    sdkVersion: text('sdk_version'),
    /** Set while a dashboard viewer watches this session live; the tracker then flushes faster. */
    liveViewerUntil: at('live_viewer_until'),
    createdAt: at('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.sessionId] }), index('sessions_started_idx').on(t.projectId, t.startedAt)],
)
