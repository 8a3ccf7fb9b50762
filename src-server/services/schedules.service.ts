import { randomUUID } from 'node:crypto';
import { atLeast, type Access } from '../auth/access';
import { ANONYMOUS_ADMIN, API_TOKEN_ADMIN, type Principal } from '../auth/principal';
import { badRequest, conflict, errorMessage, forbidden, notFound, ServiceError } from '../contracts/errors';
import type { CreateSchedule, NextTimes, Schedule, ScheduleFire, UpdateSchedule } from '../contracts/schedules';
import type { Role } from '../contracts/tenancy';
import type {
  ClaimPlan,
  NewFire,
  ScheduleChange,
  ScheduleLimitReached,
  ScheduleLimits,
  ScheduleRow,
  SchedulesRepository,
  StartingFire,
} from '../db/schedules.repository';
import type { TenancyRepository } from '../db/tenancy.repository';
import type { UsersRepository } from '../db/users.repository';
import { getLogger } from '../log';
import type { RunsService } from './runs.service';
import {
  closestFiresS,
  dueAt,
  inWords,
  localTime,
  nextAfter,
  nextTimes,
  scheduleCron,
  type ScheduleRules,
} from './schedule-times';
import type { ThreadsService } from './threads.service';
import type { AgentDirectory } from './agent-directory';
import type { AuditLog } from '../auth/audit-log';

const log = getLogger('svc.schedules');

export interface SchedulesServiceDeps {
  access: Access;
  agents: Pick<AgentDirectory, 'forProject'>;
  schedules: SchedulesRepository;
  tenancy: Pick<TenancyRepository, 'get'>;
  users: Pick<UsersRepository, 'get'>;
  threads: Pick<ThreadsService, 'visible'>;
  runs: Pick<RunsService, 'startRun'>;
  rules: ScheduleRules;
  /** Throws (400) when the model's provider is not configured. */
  checkModel(model: string): void;
  /** Throws (400) when the caller may not give a run this project path. */
  checkProjectPath(principal: Principal, projectPath: string, projectId: string): Promise<void>;
  /** AUTH_ENABLED: with it off, the anonymous administrator is who everyone is. */
  authEnabled: boolean;
  /** Whether this server has an API token (SVC_API_TOKEN or the per-launch one): its administrator exists. */
  apiTokenAdmin: boolean;
  /** This process, as recorded on the fires it claims (the run engine's owner id). */
  process: string;
  /**
   * An occurrence first seen this many seconds after its time counts as missed (no server ran at the time), and
   * goes by the schedule's catch-up policy; one seen sooner is merely late and fires as usual.
   */
  missedAfterS: number;
  /** A fire still starting this many seconds after its claim is taken over by another process (its own stopped). */
  fireLeaseS: number;
  /** SCHEDULES_MAX_PER_USER and SCHEDULES_MAX_PER_PROJECT. */
  limits: ScheduleLimits;
  /**
   * The closest two fires of a schedule may come, by the role on its project of who makes or changes it:
   * SCHEDULES_MEMBER_MIN_INTERVAL_S, and SCHEDULES_OWNER_MIN_INTERVAL_S for owners and admins.
   */
  minIntervalS: { member: number; owner: number };
  audit: AuditLog;
}

/** What the audit log keeps of a schedule: what it runs, when, as whom, and whether it is paused. */
const kept = (row: ScheduleRow) => ({
  agent: row.agent,
  cron: row.cron,
  timezone: row.timezone,
  message: row.message,
  model: row.model,
  project_path: row.project_path,
  thread_id: row.thread_id,
  catch_up: row.catch_up,
  runs_as: { id: row.created_by, name: row.created_by_name },
  paused: row.paused_at !== null,
});

/**
 * Due schedules claimed between two looks at what is due, at the most, and the time after a look when the next is
 * taken anyway: a look puts every organisation's first ones first, so one that comes due while a process works through
 * another organisation's hundreds waits half a second for its turn, not for all of them.
 */
const CLAIM_BATCH = 10;
const LOOK_AGAIN_MS = 500;

/** Who may change a schedule: its maker while she is a member of its project, or an owner (or admin) of it. */
const MANAGE_ROLE: Role = 'owner';

/**
 * Schedules (docs/schedules.md): an agent or command run at the times of a cron expression in a time zone, in a
 * project, with the rights of the person who made it (or last changed it), checked again at every fire.
 */
export function schedulesService(deps: SchedulesServiceDeps) {
  const { access, schedules, audit } = deps;

  const record = (principal: Principal, before: ScheduleRow | null, after: ScheduleRow | null) =>
    audit.record(principal, {
      action: !before ? 'schedule.created' : !after ? 'schedule.deleted' : 'schedule.changed',
      projectId: (after ?? before)!.project_id,
      target: `schedule ${(after ?? before)!.id}`,
      before: before && kept(before),
      after: after && kept(after),
    });

  async function visible(principal: Principal, id: string): Promise<ScheduleRow> {
    const row = await schedules.get(id);
    if (!row) throw notFound(`schedule ${id} not found`);
    await access.requireProjectRole(principal, row.project_id, 'viewer', `schedule ${id}`);
    return row;
  }

  async function manageable(principal: Principal, id: string): Promise<ScheduleRow> {
    const row = await visible(principal, id);
    const role = await access.scopeRole(principal, 'project', row.project_id);
    const maker = principal.id === row.created_by && atLeast(role, 'member');
    if (!maker && !atLeast(role, MANAGE_ROLE)) {
      throw forbidden(
        `your role here is ${role}; a schedule is changed by the person who made it or by an owner of its project`,
      );
    }
    return row;
  }

  const cronOf = (row: Pick<ScheduleRow, 'cron' | 'timezone'>) => scheduleCron(row.cron, row.timezone, deps.rules);

  /** Refuses (400) a cron whose fires come closer than the role of who makes or changes the schedule allows. */
  async function checkPace(principal: Principal, projectId: string, cron: string): Promise<void> {
    const owner = atLeast(await access.scopeRole(principal, 'project', projectId), 'owner');
    const floorS = owner ? deps.minIntervalS.owner : deps.minIntervalS.member;
    // Read in UTC: the pace as written, whatever daylight saving does to it.
    const closest = closestFiresS(scheduleCron(cron, 'UTC', deps.rules), floorS);
    if (closest === null || closest >= floorS) return;
    const [who, variable] = owner
      ? ['an owner or admin', 'SCHEDULES_OWNER_MIN_INTERVAL_S']
      : ['a member', 'SCHEDULES_MEMBER_MIN_INTERVAL_S'];
    const message =
      `its fires come ${inWords(closest)} apart, and ${who} of its project may schedule fires no closer than ` +
      `${inWords(floorS)} apart (${variable}=${floorS}): space its times further apart` +
      (owner ? '' : ', or ask an owner of the project to make it');
    throw badRequest(`invalid request body: cron: ${message}`, { fields: [{ field: 'cron', message }] });
  }

  /** The 409 of a schedule that would take the person it runs as, or its project, past a limit. */
  async function overLimit(reached: ScheduleLimitReached, projectId: string, changing: boolean) {
    if (reached.limit === 'user') {
      return conflict(
        `${changing ? 'changing it would make it run as you, and ' : ''}you run ${reached.count} schedules already, ` +
          `the most one person may (SCHEDULES_MAX_PER_USER=${deps.limits.perUser}): delete one you no longer need` +
          (changing ? ', or ask the person it runs as to change it' : ''),
      );
    }
    const project = (await deps.tenancy.get('project', projectId))?.name ?? projectId;
    return conflict(
      `project ${project} has ${reached.count} schedules already, the most one project may have ` +
        `(SCHEDULES_MAX_PER_PROJECT=${deps.limits.perProject}): delete one it no longer needs`,
    );
  }

  async function toSchedule(row: ScheduleRow, lastFire?: ScheduleFire | null): Promise<Schedule> {
    let upcoming: string[] = [];
    if (row.next_fire_at) {
      try {
        const cron = cronOf(row);
        upcoming = [row.next_fire_at, ...nextTimes(cron, row.next_fire_at, 2)].map((d) => d.toISOString());
      } catch {
        upcoming = [row.next_fire_at.toISOString()];
      }
    }
    return {
      id: row.id,
      project_id: row.project_id,
      agent: row.agent,
      cron: row.cron,
      timezone: row.timezone,
      message: row.message,
      model: row.model,
      project_path: row.project_path,
      thread_id: row.thread_id,
      catch_up: row.catch_up,
      run_as: { id: row.created_by, name: row.created_by_name },
      paused_at: row.paused_at?.toISOString() ?? null,
      paused_reason: row.paused_reason,
      next_fire_at: row.next_fire_at?.toISOString() ?? null,
      next_fire_times: upcoming,
      last_fire: lastFire === undefined ? ((await schedules.lastFires([row.id])).get(row.id) ?? null) : lastFire,
      created_at: row.created_at.toISOString(),
      updated_at: row.updated_at.toISOString(),
    };
  }

  /** What a schedule's runs take from its fields, checked with the rights of who gives them. */
  async function checkRunFields(
    principal: Principal,
    projectId: string,
    fields: { agent: string; model: string | null; project_path: string | null; thread_id: string | null },
  ): Promise<void> {
    const agent = await deps.agents.forProject(projectId, fields.agent);
    if (!agent) {
      throw badRequest(`invalid request body: agent: no agent or command named "${fields.agent}" is loaded`, {
        fields: [{ field: 'agent', message: 'no such agent or command' }],
      });
    }
    if (fields.model) deps.checkModel(fields.model);
    if (fields.project_path) await deps.checkProjectPath(principal, fields.project_path, projectId);
    if (fields.thread_id) {
      const thread = await deps.threads.visible(principal, fields.thread_id, 'member');
      if (thread.project_id !== projectId) {
        throw badRequest(`invalid request body: thread_id: thread ${thread.id} belongs to another project`);
      }
      if (thread.agent !== agent.entry.manifest.name) {
        throw badRequest(
          `invalid request body: thread_id: thread ${thread.id} belongs to "${thread.agent}", not "${fields.agent}"`,
        );
      }
    }
  }

  /**
   * The principal a schedule runs as, rebuilt from the database, or why there is none now. The built-in
   * administrators exist only while the server has them: the API token's while it has an API token, the anonymous
   * one while authentication is off.
   */
  async function runAs(row: ScheduleRow): Promise<{ principal: Principal } | { lost: string }> {
    if (row.created_by === ANONYMOUS_ADMIN.id) {
      return deps.authEnabled
        ? {
            lost:
              'it was made with authentication off, as the anonymous administrator, and authentication is on now: ' +
              'someone who may change it should edit it to run it as herself',
          }
        : { principal: ANONYMOUS_ADMIN };
    }
    if (row.created_by === API_TOKEN_ADMIN.id) {
      return !deps.authEnabled || deps.apiTokenAdmin
        ? { principal: API_TOKEN_ADMIN }
        : {
            lost:
              'it was made by the API-token administrator, and this server has no API token now (SVC_API_TOKEN is ' +
              'not set): someone who may change it should edit it to run it as herself',
          };
    }
    const user = await deps.users.get(row.created_by);
    if (!user) return { lost: `the user who made it, ${row.created_by_name}, was deleted` };
    const principal: Principal = {
      id: user.id,
      kind: 'session',
      name: user.name ?? user.email ?? user.id,
      email: user.email ?? undefined,
      instanceAdmin: false,
    };
    const role = await access.scopeRole(principal, 'project', row.project_id);
    if (atLeast(role, 'member')) return { principal };
    const project = (await deps.tenancy.get('project', row.project_id))?.name ?? row.project_id;
    return {
      lost:
        `${row.created_by_name} no longer holds the member role (or higher) on project ${project}` +
        (role ? ` (her role there is ${role} now)` : ' (she holds no role there now)'),
    };
  }

  /** Starts the run of a claimed fire and records how it went; pauses the schedule when its maker may not run it. */
  async function start(row: ScheduleRow, occurrence: Date, runKey: string): Promise<ScheduleFire | undefined> {
    const who = await runAs(row);
    if ('lost' in who) return pauseFrom(row, occurrence, `Paused: ${who.lost}.`);
    try {
      const run = await deps.runs.startRun(
        who.principal,
        row.agent,
        {
          message: row.message,
          ...(row.model ? { model: row.model } : {}),
          ...(row.project_path ? { project_path: row.project_path } : {}),
          ...(row.thread_id ? { thread_id: row.thread_id } : { project_id: row.project_id }),
        },
        undefined,
        undefined,
        runKey,
      );
      log.info(`schedule ${row.id} fired for ${occurrence.toISOString()}: run ${run.runId} as ${who.principal.name}`);
      return schedules.settleFire(row.id, occurrence, { outcome: 'started', reason: null });
    } catch (error) {
      const message = errorMessage(error);
      // A busy thread or the runtime's limit is this occurrence's bad luck; anything else the maker must see to.
      const passing = !(error instanceof ServiceError) || [409, 429, 503].includes(error.status);
      if (passing) {
        log.warn(`schedule ${row.id}: the run for ${occurrence.toISOString()} was refused: ${message}`);
        return schedules.settleFire(row.id, occurrence, { outcome: 'refused', reason: message });
      }
      return pauseFrom(row, occurrence, `Paused: the run could not start: ${message}`);
    }
  }

  /** The fires this process is starting now: its own lease lapsing meanwhile is no reason to start one again. */
  const inFlight = new Set<string>();
  const fireKey = (fire: StartingFire) => `${fire.scheduleId} ${fire.occurrence.getTime()}`;

  /** A claimed fire's start, its run given the id of the claim (`runKey`): started twice, the second fails. */
  async function startClaimed(row: ScheduleRow, fire: StartingFire): Promise<ScheduleFire | undefined> {
    inFlight.add(fireKey(fire));
    try {
      return await start(row, fire.occurrence, fire.runKey);
    } finally {
      inFlight.delete(fireKey(fire));
    }
  }

  async function pauseFrom(row: ScheduleRow, occurrence: Date, reason: string): Promise<ScheduleFire | undefined> {
    await schedules.pause(row.id, reason);
    log.warn(`schedule ${row.id} paused at its fire for ${occurrence.toISOString()}: ${reason}`);
    return schedules.settleFire(row.id, occurrence, { outcome: 'paused', reason });
  }

  /**
   * This process's unbroken watch over what is due, by the database's clock: since when it has looked with no gap
   * longer than missedAfterS between two looks (a database away, a machine asleep make one), and its last look.
   */
  let watch: { since: Date; last: Date } | undefined;
  function look(now: Date): void {
    const unbroken = watch && now.getTime() - watch.last.getTime() <= deps.missedAfterS * 1000;
    watch = { since: unbroken ? watch!.since : now, last: now };
  }

  /** What to do with a due schedule, at the database's clock `now` (see SchedulesRepository.claim). */
  function plan(row: ScheduleRow, now: Date): ClaimPlan {
    let cron;
    try {
      cron = cronOf(row);
    } catch (error) {
      return { fires: [], nextFireAt: null, pauseReason: `Paused: its cron cannot be used: ${errorMessage(error)}` };
    }
    const due = dueAt(cron, row.next_fire_at!, now);
    // Missed: nobody looked within missedAfterS of it. This process has looked without a break since `watch.since`,
    // so an occurrence after that is only late (behind others due at once), however long it waited for its turn.
    const seen = (watch?.since ?? now).getTime();
    const late = seen - due.latest.getTime() > deps.missedAfterS * 1000;
    const fires: NewFire[] = [];
    const at = (d: Date) => localTime(d, row.timezone);
    const missed = due.count - (late ? 0 : 1);
    const span = (to: Date) =>
      `${due.more ? 'over ' : ''}${missed} occurrence${missed === 1 ? '' : 's'} ` +
      (missed === 1 ? `at ${at(due.first)}` : `from ${at(due.first)} to ${at(to)}`);
    if (!late) {
      if (missed > 0) {
        // Seen in time but overtaken by the next before their turn came: one run, not a pile of them, for a schedule
        // behind the others due at once.
        const idle = seen - due.first.getTime() > deps.missedAfterS * 1000;
        const why = idle ? 'no server ran' : 'the servers were busy with the schedules due before it';
        fires.push({
          occurrence: due.first,
          kind: 'catch_up',
          outcome: 'skipped',
          reason: `${span(lastMissed(cron, due))} passed while ${why}; the next, at ${at(due.latest)}, ran`,
          firedBy: null,
        });
      }
      fires.push({ occurrence: due.latest, kind: 'scheduled', outcome: 'starting', reason: null, firedBy: null });
    } else if (row.catch_up === 'one') {
      fires.push({
        occurrence: due.latest,
        kind: 'catch_up',
        outcome: 'starting',
        reason: `one run for ${span(due.latest)}, missed while no server ran`,
        firedBy: null,
      });
    } else {
      fires.push({
        occurrence: due.latest,
        kind: 'catch_up',
        outcome: 'skipped',
        reason: `${span(due.latest)} missed while no server ran; catch-up policy none: not run`,
        firedBy: null,
      });
    }
    // A cron that fires no more (a date that has passed) would wait for ever: paused, it says so.
    if (!due.next)
      return { fires, nextFireAt: null, pauseReason: `Paused: its cron fires no more after ${at(due.latest)}.` };
    return { fires, nextFireAt: due.next };
  }

  /** The last of the missed occurrences before the one on time. */
  function lastMissed(cron: ReturnType<typeof cronOf>, due: ReturnType<typeof dueAt>): Date {
    const before = cron.previousRuns(1, due.latest)[0];
    return before && before.getTime() >= due.first.getTime() ? before : due.first;
  }

  /** The next occurrence after now: where a new, changed or resumed schedule starts (nothing before it runs). */
  function upcoming(row: Pick<ScheduleRow, 'cron' | 'timezone'>): Date | null {
    return nextAfter(cronOf(row), new Date());
  }

  return {
    async list(principal: Principal, projectId: string): Promise<Schedule[]> {
      await access.requireProjectRole(principal, projectId, 'viewer', `project ${projectId}`);
      const rows = await schedules.listByProject(projectId);
      const last = await schedules.lastFires(rows.map((r) => r.id));
      return Promise.all(rows.map((row) => toSchedule(row, last.get(row.id) ?? null)));
    },

    async get(principal: Principal, id: string): Promise<Schedule> {
      return toSchedule(await visible(principal, id));
    },

    async create(principal: Principal, projectId: string, body: CreateSchedule): Promise<Schedule> {
      await access.requireProjectRole(principal, projectId, 'member', `project ${projectId}`);
      const next = upcoming(body);
      await checkPace(principal, projectId, body.cron);
      await checkRunFields(principal, projectId, {
        agent: body.agent,
        model: body.model ?? null,
        project_path: body.project_path ?? null,
        thread_id: body.thread_id ?? null,
      });
      const row = await schedules.insertWithin(
        {
          id: randomUUID(),
          project_id: projectId,
          created_by: principal.id,
          created_by_name: principal.name,
          agent: body.agent,
          cron: body.cron,
          timezone: body.timezone,
          message: body.message,
          model: body.model ?? null,
          project_path: body.project_path ?? null,
          thread_id: body.thread_id ?? null,
          catch_up: body.catch_up,
          next_fire_at: next,
        },
        deps.limits,
      );
      if ('limit' in row) throw await overLimit(row, projectId, false);
      log.info(`schedule ${row.id} (${row.agent}, "${row.cron}" ${row.timezone}) created by ${principal.name}`);
      await record(principal, null, row);
      return toSchedule(row, null);
    },

    /**
     * Only the fields given change. The schedule then runs as the person who changed it: nobody makes a run in
     * someone else's name with words she did not choose.
     */
    async update(principal: Principal, id: string, body: UpdateSchedule): Promise<Schedule> {
      const row = await manageable(principal, id);
      const merged = {
        agent: body.agent ?? row.agent,
        cron: body.cron ?? row.cron,
        timezone: body.timezone ?? row.timezone,
        model: body.model === undefined ? row.model : body.model,
        project_path: body.project_path === undefined ? row.project_path : body.project_path,
        thread_id: body.thread_id === undefined ? row.thread_id : body.thread_id,
      };
      const retimed = body.cron !== undefined || body.timezone !== undefined;
      const next = retimed ? upcoming(merged) : undefined;
      // From now on it runs as the person changing it: her role sets how close its fires may come.
      await checkPace(principal, row.project_id, merged.cron);
      await checkRunFields(principal, row.project_id, merged);
      const change: ScheduleChange = {
        ...merged,
        agent: merged.agent,
        message: body.message,
        catch_up: body.catch_up,
        created_by: principal.id,
        created_by_name: principal.name,
        // A paused schedule stays paused, with no next time, until it is resumed.
        ...(retimed && !row.paused_at ? { next_fire_at: next } : {}),
      };
      const updated = await schedules.update(id, change, deps.limits.perUser);
      if (!updated) throw notFound(`schedule ${id} not found`);
      if ('limit' in updated) throw await overLimit(updated, row.project_id, true);
      log.info(`schedule ${id} changed by ${principal.name}`);
      await record(principal, row, updated);
      return toSchedule(updated);
    },

    async remove(principal: Principal, id: string): Promise<void> {
      const row = await manageable(principal, id);
      if (!(await schedules.remove(id))) throw notFound(`schedule ${id} not found`);
      log.info(`schedule ${id} deleted by ${principal.name}`);
      await record(principal, row, null);
    },

    /** Occurrences while paused never run: resuming starts again at the next one after now. */
    async pause(principal: Principal, id: string): Promise<Schedule> {
      const before = await manageable(principal, id);
      const row = await schedules.pause(id, `Paused by ${principal.name}.`);
      if (!row) throw notFound(`schedule ${id} not found`);
      log.info(`schedule ${id} paused by ${principal.name}`);
      await record(principal, before, row);
      return toSchedule(row);
    },

    async resume(principal: Principal, id: string): Promise<Schedule> {
      const row = await manageable(principal, id);
      const who = await runAs(row);
      if ('lost' in who) {
        throw conflict(
          `schedule ${id} cannot run as ${row.created_by_name}: ${who.lost}; edit it to run it as yourself, or delete it`,
        );
      }
      const resumed = await schedules.resume(id, upcoming(row));
      if (!resumed) throw notFound(`schedule ${id} not found`);
      log.info(`schedule ${id} resumed by ${principal.name}`);
      await record(principal, row, resumed);
      return toSchedule(resumed);
    },

    /** One run now, as the schedule's maker, whether or not it is paused; recorded with the fires. */
    async runNow(principal: Principal, id: string): Promise<ScheduleFire> {
      const row = await manageable(principal, id);
      const fire = await schedules.insertManualFire(id, principal.name, deps.process, deps.fireLeaseS);
      if (!fire) throw conflict(`schedule ${id} was run at this very instant already: try again`);
      return (await startClaimed(row, fire))!;
    },

    async fires(principal: Principal, id: string, limit: number): Promise<ScheduleFire[]> {
      await visible(principal, id);
      return schedules.fires(id, limit);
    },

    nextTimes(query: { cron: string; timezone: string; count: number }): NextTimes {
      const cron = scheduleCron(query.cron, query.timezone, deps.rules, 'query parameters');
      const times = nextTimes(cron, new Date(), query.count);
      return {
        times: times.map((d) => d.toISOString()),
        local_times: times.map((d) => localTime(d, query.timezone)),
      };
    },

    /**
     * Fires every due schedule this process can claim (the scheduler's tick), a few at a time with a new look at what
     * is due between them (CLAIM_BATCH, LOOK_AGAIN_MS), until none is left or `goOn` says stop; then takes over the
     * fires other processes claimed and stopped before starting. Answers how many runs it started. Each occurrence is
     * claimed by a row only one process can insert, so several processes may tick at once.
     */
    async fireDue(goOn: () => boolean = () => true): Promise<number> {
      let started = 0;
      const starting = async (row: ScheduleRow, fire: StartingFire) => {
        if ((await startClaimed(row, fire))?.outcome === 'started') started++;
      };
      for (let more = true; more && goOn();) {
        const due = await schedules.due(CLAIM_BATCH);
        const lookedAt = Date.now();
        look(due.now);
        more = due.ids.length === CLAIM_BATCH;
        for (const id of due.ids) {
          if (Date.now() - lookedAt > LOOK_AGAIN_MS) {
            more = true;
            break;
          }
          const claimed = await schedules.claim(id, deps.process, plan, deps.fireLeaseS);
          if (!claimed) continue;
          if (claimed.row.paused_reason && claimed.row.paused_at && !claimed.fires.length) {
            log.warn(`schedule ${id} paused: ${claimed.row.paused_reason}`);
          }
          for (const fire of claimed.fires) {
            if (fire.outcome === 'skipped') log.info(`schedule ${id}: ${fire.reason}`);
          }
          for (const fire of claimed.starting) await starting(claimed.row, fire);
        }
      }
      for (const fire of await schedules.takeOverLapsed(deps.process, deps.fireLeaseS, CLAIM_BATCH)) {
        const row = await schedules.get(fire.scheduleId);
        if (!row || inFlight.has(fireKey(fire))) continue;
        const at = `schedule ${fire.scheduleId}'s fire for ${fire.occurrence.toISOString()}`;
        if (fire.runExists) {
          // Its run began before the process that claimed it stopped: it is recorded, and none other starts.
          log.warn(`${at} was left starting by a process that stopped; its run ${fire.runKey} had begun`);
          await schedules.settleFire(fire.scheduleId, fire.occurrence, { outcome: 'started', reason: null });
        } else {
          log.warn(`${at} was left starting by a process that stopped; starting its run now`);
          await starting(row, fire);
        }
      }
      return started;
    },
  };
}

export type SchedulesService = ReturnType<typeof schedulesService>;
