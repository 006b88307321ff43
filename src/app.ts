import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import { installGuard } from './auth/guard.js';
import { apiKeyRoutes } from './auth/routes.js';
import { budgetRoutes } from './budgets/routes.js';
import { containerRoutes } from './catalog/containers/routes.js';
import { datasetRoutes } from './catalog/datasets/routes.js';
import { judgeTemplateRoutes } from './catalog/judge-templates/routes.js';
import { logRoutes } from './catalog/logs/routes.js';
import { modelRoutes } from './catalog/models/routes.js';
import { DASHBOARD_API, isDashboardPage } from './dashboard/api-prefix.js';
import { evaluatorRoutes } from './evaluators/routes.js';
import { inferenceRoutes } from './gateway/routes.js';
import { guardRoutes } from './guards/routes.js';
import { installBodyDeadline, installRequestDeadlines } from './http/deadlines.js';
import { clientErrorHandler, frameworkErrorHandler, installErrorHandling } from './http/error-handler.js';
import { healthRoutes } from './http/health.js';
import { installJsonParser } from './http/json-parser.js';
import { serveLazily } from './http/lazy-prefix.js';
import { lazySerializers } from './http/lazy-serializers.js';
import { DOCS_PREFIX, installBodyErrorResponses, installDocsPage, installOpenApi } from './http/openapi.js';
import { validatorCompiler } from './http/validation.js';
import { mcpRoutes } from './mcp/routes.js';
import { monitorRoutes } from './monitors/routes.js';
import { installMetrics, installMetricsRoute } from './observability/http.js';
import { evalRoutes } from './openai-evals/evals-routes.js';
import { fileRoutes } from './openai-evals/files-routes.js';
import { graderRoutes } from './openai-evals/graders-routes.js';
import { storedCompletionRoutes } from './openai-evals/stored-completions-routes.js';
import { playgroundRoutes } from './playground/routes.js';
import { promptRoutes } from './prompts/routes.js';
import { reviewRoutes } from './review/routes.js';
import { runRoutes } from './runs/routes.js';
import type { Services } from './services.js';
import { sessionRoutes } from './sessions/routes.js';
import { traceRoutes } from './traces/routes.js';

export interface App {
  server: FastifyInstance;
  services: Services;
  close(): Promise<void>;
}

/** Requests in progress get this long to finish when the server closes; then their connections are cut. */
const SHUTDOWN_GRACE_MS = 30_000;

/**
 * Open connections, so that closing does not wait on clients that connected and never sent a byte
 * (HTTP clients open spare connections): those are cut at once, the others after SHUTDOWN_GRACE_MS.
 */
function trackConnections(http: Server) {
  const open = new Set<Socket>();
  http.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  return {
    async closing(closed: Promise<void>): Promise<void> {
      for (const socket of open) if (socket.bytesRead === 0) socket.destroy();
      const timer = setTimeout(() => http.closeAllConnections(), SHUTDOWN_GRACE_MS);
      timer.unref();
      try {
        await closed;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/**
 * Tells the services which ports this server listens on once it does (port 0 is resolved only then), so
 * that neither a registered model nor the provider layer can point the gateway at itself.
 */
function trackOwnPorts(server: FastifyInstance, self: Services['self']): void {
  const ports: number[] = [];
  server.addHook('onListen', function (done) {
    for (const address of this.addresses()) {
      if (typeof address === 'string') continue; // a Unix socket or pipe: no port to loop through
      ports.push(address.port);
      self.listening(address.port);
    }
    done();
  });
  server.addHook('onClose', (_instance, done) => {
    for (const port of ports.splice(0)) self.stopped(port);
    done();
  });
}

/** The Fastify options of the app, and of the instance serving the dashboard's API (`dashboardApi`). */
function appOptions(services: Services) {
  const { config } = services;
  return {
    loggerInstance: services.logger,
    bodyLimit: config.bodyLimit,
    // A caller's X-Request-Id is kept when it is a plausible id; anything else gets a fresh one.
    requestIdHeader: false as const,
    genReqId: (req: IncomingMessage) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
    },
    // Per-request log lines only at debug level: at info they would dominate the cost of a gateway call.
    logController: new LogController({
      disableRequestLogging: config.logLevel !== 'debug' && config.logLevel !== 'trace',
    }),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    frameworkErrors: frameworkErrorHandler,
    // Requests the HTTP parser refuses, and those arriving while closing, are answered in the envelope.
    clientErrorHandler,
    return503OnClosing: false,
    // Response serializers compiled on first use (validators too: `validatorCompiler`), not at start.
    schemaController: { compilersFactory: { buildSerializer: lazySerializers() } },
  };
}

/** What every request meets before its route: errors, body parsing, the body deadline, keys, metrics. */
function installRequestHandling(server: FastifyInstance, services: Services): void {
  server.setValidatorCompiler(validatorCompiler);
  installErrorHandling(server);
  installJsonParser(server);
  installBodyDeadline(server, services.config.requests);
  installGuard(server, services.auth, services.limiter, services.config.requests.keyConcurrency);
  installMetrics(server, services.metrics);
}

/**
 * An instance made on the first request under a prefix (src/http/lazy-prefix.ts), for a group of routes
 * a process may never serve: the app's options and request handling, the same 413/415 responses on body
 * methods, then what `register` adds.
 */
async function lazyInstance(
  services: Services,
  register: (server: FastifyInstance) => Promise<void>,
): Promise<FastifyInstance> {
  const server = Fastify(appOptions(services)).withTypeProvider<TypeBoxTypeProvider>();
  installRequestHandling(server, services);
  installBodyErrorResponses(server);
  await register(server);
  return server;
}

/** The dashboard's JSON API: its 120-odd routes are registered only by a process whose dashboard is used. */
async function dashboardApi(
  server: FastifyInstance,
  services: Services,
  app: FastifyInstance,
): Promise<void> {
  const { dashboardRoutes } = await import('./dashboard/routes.js');
  await server.register(dashboardRoutes, { ports: services.ports.dashboard, listening: app });
}

/**
 * The API of one process over the services (`createServices`): routes, auth, errors, OpenAPI, metrics.
 * Closing the app stops the HTTP server; the services are closed by whoever created them.
 */
export async function createApp(services: Services): Promise<App> {
  const { config } = services;
  const server = Fastify(appOptions(services)).withTypeProvider<TypeBoxTypeProvider>();
  serveLazily(server, DASHBOARD_API, () =>
    lazyInstance(services, (api) => dashboardApi(api, services, server)),
  );
  serveLazily(server, isDashboardPage, () =>
    lazyInstance(services, async (web) => {
      const { dashboardWeb } = await import('./dashboard/web.js');
      await web.register(dashboardWeb);
    }),
  );
  serveLazily(server, DOCS_PREFIX, () => lazyInstance(services, (docs) => installDocsPage(docs, server)));
  // The connection limits and header deadline of the HTTP server (the body's deadline is a hook).
  installRequestDeadlines(server, config.requests);
  // The timing hook before the OpenAPI plugin (its routes are timed too), the route after it (documented).
  installRequestHandling(server, services);
  await installOpenApi(server);
  installMetricsRoute(server, services.metrics);
  // Each feature registers with its own port, and sees nothing else of the process.
  const { ports } = services;
  await server.register(healthRoutes, { ports: ports.health });
  await server.register(apiKeyRoutes, { ports: ports.apiKeys });
  await server.register(budgetRoutes, { ports: ports.budgets });
  await server.register(containerRoutes, { ports: ports.containers });
  await server.register(logRoutes, { ports: ports.logs });
  await server.register(datasetRoutes, { ports: ports.datasets });
  await server.register(modelRoutes, { ports: ports.models });
  await server.register(evaluatorRoutes, { ports: ports.evaluators });
  await server.register(judgeTemplateRoutes);
  await server.register(inferenceRoutes, { ports: ports.inference });
  await server.register(runRoutes, { ports: ports.runs });
  await server.register(graderRoutes, { ports: ports.graders });
  await server.register(fileRoutes, { ports: ports.files });
  await server.register(evalRoutes, { ports: ports.evals });
  await server.register(storedCompletionRoutes, { ports: ports.storedCompletions });
  await server.register(monitorRoutes, { ports: ports.monitors });
  await server.register(sessionRoutes, { ports: ports.sessions });
  await server.register(traceRoutes, { ports: ports.traces });
  await server.register(reviewRoutes, { ports: ports.review });
  await server.register(promptRoutes, { ports: ports.prompts });
  await server.register(playgroundRoutes, { ports: ports.playground });
  await server.register(guardRoutes, { ports: ports.guards });
  // The MCP tools call the same services as the REST routes of their operations, with the same ports.
  await server.register(mcpRoutes, {
    ports: {
      auth: services.auth,
      limiter: services.limiter,
      publicUrl: config.dashboard.publicUrl ?? null,
      logs: ports.logs,
      traces: ports.traces,
      sessions: ports.sessions,
      runs: ports.runs,
      evaluators: ports.evaluators,
      review: ports.review,
      datasets: ports.datasets,
      prompts: ports.prompts,
    },
  });
  trackOwnPorts(server, services.self);
  await server.ready();
  const connections = trackConnections(server.server);

  return {
    server,
    services,
    async close() {
      await connections.closing(server.close());
    },
  };
}
