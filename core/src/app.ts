import { Elysia } from 'elysia'
import type { Config } from './config'
import type { Database } from './db'
import { bodyParser } from './http/body'
import { createBodyBudget } from './http/body-budget'
import { cors, isPublicPath } from './http/cors'
import { errorHandler, escapedErrorHandler } from './http/errors'
import { requestLog } from './http/request-log'
import { routeTable, type RouteTable } from './http/routes'
import { errorRoutes } from './ingest/errors'
import { eventRoutes } from './ingest/events'
import { geoRoutes } from './ingest/geo'
import { createClientLocator, type ClientLocator } from './ingest/geo/locator'
import { groupRoutes } from './ingest/groups'
import { healthRoutes } from './ingest/health'
import { identityRoutes } from './ingest/identity'
import { initRoutes } from './ingest/init'
import { internalBodyReaders, internalRoutes } from './ingest/internal'
import { logRoutes } from './ingest/logs'
import { networkRoutes } from './ingest/network'
import { ingestion } from './ingest/plugin'
import { presenceRoutes } from './ingest/presence'
import { replayBodyReaders, replayRoutes } from './ingest/replay'
import { sourceMapRoutes } from './ingest/sourcemaps'
import { createSourceMapResolver } from './ingest/sourcemaps/resolver'
import { spanRoutes } from './ingest/spans'
import type { Logger } from './log'
import type { Services } from './services'

export interface AppDeps extends Omit<Services, 'stop'> {
  config: Config
  db: Database
  log: Logger
  startedAt?: number
  /** Client address and GeoIP; made from `config` (TRUSTED_PROXIES, GEOIP_DB) when not given. */
  locator?: ClientLocator
}

/** Composes the feature modules into one app. Nothing runs at import time; `main.ts` listens. */
export function createApp(deps: AppDeps) {
  let routes: RouteTable = new Map()
  const shared = { ingestion: ingestion(deps), writer: deps.writer, locator: deps.locator ?? createClientLocator(deps.config) }
  const bodies = createBodyBudget(deps.config.maxBodyMemoryBytes)
  const app = new Elysia({
    // Unknown body fields are stripped, never refused: clients in the field send more than we read.
    // 'typebox' rather than the default mirror, which turns a wrong-typed value (a string or array
    // where an object belongs) into an object of its characters instead of refusing it.
    normalize: 'typebox',
    // A path means one thing everywhere: Elysia would also route `/events/` to `/events`, while the
    // body limits, body readers, CORS and `Allow` look paths up as written. `/events/` is unknown: 404.
    strictPath: true,
    // Elysia finds the path after the host by assuming a host of at least four characters; behind a
    // proxy naming its upstream `api` (nginx's `proxy_pass http://api;`) requests were routed by the
    // wrong path.
    handler: { standardHostname: false },
    // Bun's own limit would answer a bare 413; ours (http/body.ts) refuse by Content-Length before
    // reading and cap what streams in, in WIRE.md's error shape, so Bun's is never the one to answer.
    // Bun's development mode (on unless NODE_ENV=production) answers an error that escapes every
    // handler with the source code around it; core is never a development server.
    serve: { maxRequestBodySize: Number.MAX_SAFE_INTEGER, development: false, error: escapedErrorHandler(deps.log) },
  })
    .use(errorHandler(deps.log, () => routes, bodies.release))
    // Before the routes it logs, preflight (a route of the CORS plugin) included.
    .use(requestLog(deps.log))
    .use(cors(() => routes))
    .use(bodyParser(deps.config, { ...replayBodyReaders(deps), ...internalBodyReaders(deps.config.internalSecret) }, bodies))
    .use(
      healthRoutes({
        db: deps.db,
        writerStats: deps.writer.stats,
        startedAt: deps.startedAt ?? Date.now(),
      }),
    )
    .use(eventRoutes(shared))
    .use(initRoutes(shared))
    .use(replayRoutes(shared))
    .use(identityRoutes(shared))
    .use(groupRoutes(shared))
    .use(geoRoutes(shared))
    .use(logRoutes(shared))
    .use(networkRoutes(shared))
    .use(spanRoutes(shared))
    .use(errorRoutes({ ...shared, sourceMaps: createSourceMapResolver(deps.db, deps.log) }))
    .use(sourceMapRoutes(shared))
    .use(presenceRoutes({ ...shared, db: deps.db, log: deps.log }))
    .use(internalRoutes({ secret: deps.config.internalSecret, writer: deps.writer, db: deps.db, log: deps.log }))

  // Preflight on the public paths only: internal routes are for the operator's tools, not browsers.
  routes = routeTable(app.routes, isPublicPath)
  return app
}

export type App = ReturnType<typeof createApp>
export type { RouteTable }
