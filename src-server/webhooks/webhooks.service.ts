import { randomBytes, randomUUID } from 'node:crypto';
import type { Access } from '../auth/access';
import type { AuditLog } from '../auth/audit-log';
import type { Principal } from '../auth/principal';
import { conflict, notFound } from '../contracts/errors';
import {
  WEBHOOK_EVENTS,
  type CreatedWebhook,
  type CreateWebhook,
  type Delivery,
  type Webhook,
} from '../contracts/webhooks';
import type { WebhookScope, WebhooksRepository } from '../db/webhooks.repository';
import { getLogger } from '../log';
import { checkWebhookUrl, webhookOrigin } from './webhook-url';

const log = getLogger('svc.webhooks');
const NAME = { project: 'project', org: 'organisation' } as const;

/**
 * What the audit log keeps of a webhook: where it sends (the URL's origin only, as the log lines say: a path may be
 * a credential) and what; never its signing secret.
 */
const kept = (webhook: Webhook) => ({ id: webhook.id, url: webhookOrigin(webhook.url), events: webhook.events });
const auditScope = (scope: WebhookScope) => (scope.type === 'project' ? { projectId: scope.id } : { orgId: scope.id });

/** The scope a request names: exactly one of the two ids (the request schemas refuse anything else). */
function scopeOf(ids: { project_id?: string | null; org_id?: string | null }): WebhookScope {
  return ids.project_id ? { type: 'project', id: ids.project_id } : { type: 'org', id: ids.org_id! };
}

/**
 * Registering, listing and removing webhooks, and reading their deliveries (docs/webhooks.md). Each needs `admin`
 * on the webhook's project or organisation, held there or above it; a caller without any role there gets 404.
 */
export function webhooksService(deps: {
  access: Access;
  webhooks: WebhooksRepository;
  allowPrivateUrls: boolean;
  /** Webhooks one project or organisation may have of its own (WEBHOOK_MAX_PER_SCOPE). */
  maxPerScope: number;
  audit: AuditLog;
}) {
  const { access, webhooks, allowPrivateUrls, maxPerScope, audit } = deps;

  /** The webhook, if the caller administers its scope: 404 for another tenant's, as for a missing one. */
  async function administered(principal: Principal, id: string): Promise<Webhook> {
    const webhook = await webhooks.get(id);
    if (!webhook) throw notFound(`webhook ${id} not found`);
    const scope = scopeOf(webhook);
    await access.requireScopeRole(principal, scope.type, scope.id, 'admin', `webhook ${id}`);
    return webhook;
  }

  return {
    /** The secret is made here and shown in this answer only; the list never shows it again. */
    async create(principal: Principal, body: CreateWebhook): Promise<CreatedWebhook> {
      const scope = scopeOf(body);
      // The role first: someone who may not see the scope learns nothing from how their URL is judged.
      await access.requireScopeRole(principal, scope.type, scope.id, 'admin', `${NAME[scope.type]} ${scope.id}`);
      const url = await checkWebhookUrl(body.url, { allowPrivate: allowPrivateUrls });
      // 32 random bytes, within the 24 to 64 Standard Webhooks asks of a secret.
      const secret = `whsec_${randomBytes(32).toString('base64')}`;
      const events = WEBHOOK_EVENTS.filter((event) => body.events.includes(event));
      const webhook = await webhooks.insertWithin(
        { id: randomUUID(), scope, url, events, secret, createdBy: principal.id },
        maxPerScope,
      );
      if (!webhook) {
        throw conflict(
          `${NAME[scope.type]} ${scope.id} already has ${maxPerScope} webhooks, the most one project or organisation ` +
            'may have (WEBHOOK_MAX_PER_SCOPE): delete one to register another',
        );
      }
      log.info(
        `webhook ${webhook.id} registered on ${NAME[scope.type]} ${scope.id} by ${principal.name}: ` +
          `${events.join(', ')} to ${webhookOrigin(url)}`,
      );
      await audit.record(principal, {
        action: 'webhook.created',
        ...auditScope(scope),
        target: `webhook ${webhook.id}`,
        before: null,
        after: kept(webhook),
      });
      return { ...webhook, secret };
    },

    async list(principal: Principal, ids: { project_id?: string; org_id?: string }): Promise<Webhook[]> {
      const scope = scopeOf(ids);
      await access.requireScopeRole(principal, scope.type, scope.id, 'admin', `${NAME[scope.type]} ${scope.id}`);
      return webhooks.list(scope);
    },

    async remove(principal: Principal, id: string): Promise<void> {
      const webhook = await administered(principal, id);
      if (!(await webhooks.remove(id))) throw notFound(`webhook ${id} not found`);
      log.info(`webhook ${id} removed by ${principal.name}`);
      await audit.record(principal, {
        action: 'webhook.deleted',
        ...auditScope(scopeOf(webhook)),
        target: `webhook ${id}`,
        before: kept(webhook),
        after: null,
      });
    },

    async deliveries(principal: Principal, id: string, limit: number): Promise<Delivery[]> {
      await administered(principal, id);
      return webhooks.deliveries(id, limit);
    },
  };
}

export type WebhooksService = ReturnType<typeof webhooksService>;
