import type { TaskReservations } from '../admission/admission.js';
import type { TokenStanding } from '../auth/authenticator.js';
import type { Config } from '../config/config.js';
import type { GenerationService } from '../generation/generation-service.js';
import type { Database } from '../store/database/database.js';
import { createTaskStore, type TaskStore } from '../store/task-store.js';
import type { Log } from '../support/log.js';
import { TaskRunner } from '../tasks/task-runner.js';
import { TaskService } from '../tasks/task-service.js';

export interface TaskServices {
  store: TaskStore;
  service: TaskService;
  runner: TaskRunner;
}

export interface TaskOptions {
  config: Pick<Config, 'tasks' | 'admission'>;
  database: Database;
  generation: GenerationService;
  admission: TaskReservations;
  tokens: TokenStanding;
  now: () => number;
  log: Log;
}

/** The task store on the gateway's database, the service the routes use, and this node's runner. */
export function openTasks(options: TaskOptions): TaskServices {
  const { config, database, generation, admission, tokens, now, log } = options;
  const store = createTaskStore(database.kind, database.db, database.listingReads);
  const runner = new TaskRunner({
    store,
    generation,
    admission,
    tokens,
    concurrency: config.tasks.concurrency,
    pollMs: config.tasks.pollMs,
    leaseMs: config.tasks.leaseMs,
    reservationTtlMs: config.admission.reservationTtlMs,
    now,
    log,
  });
  const service = new TaskService({
    store,
    admission,
    queueLimit: config.tasks.queueLimit,
    queueLimitPerToken: config.tasks.queueLimitPerToken,
    submitted: () => runner.wake(),
    handoverMs: config.tasks.leaseMs,
    now,
    log,
  });
  return { store, service, runner };
}
