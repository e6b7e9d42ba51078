/**
 * Message records shared through Redis, so that a webhook post reaching any instance finds the send
 * another made, and a duplicate delivery is counted once whichever instances the two copies reach.
 *
 * Layout (prefix P, ids and numbers URI-encoded; <ch> is chat or rcs), every key expiring:
 *   P m:<id>           hash {rec (the send, JSON), status}         retention from the send
 *   P me:<id>          list of event JSON, oldest first           as its m:<id>
 *   P seen:<key>       "1", written with SET NX PX                 retention
 *   P mp:<ch>:<to>     list of pending sends (JSON with `exp`)     retention from the last one
 *   P mo:<id>          events of an unknown message (list of JSON) ORPHAN_TTL_MS
 *   P mom:<ch>:<to>    orphans by recipient ({id, k, at} JSON)     ORPHAN_TTL_MS
 *   P mc:<campaign>    a saved, unlaunched campaign (JSON)         retention
 * Each change is one Lua script, so two instances adding events to one message, or adopting for one
 * recipient, never interleave; a campaign's recipients are recorded CAMPAIGN_BATCH to a script. (The
 * scripts build the keys of an orphan they adopt from the prefix: one Redis, not a cluster, as
 * elsewhere in the store.)
 */
import type { MessagingEvent } from '../provider/messaging/types.js';
import {
  eventNumber,
  MAX_EVENTS_PER_MESSAGE,
  MAX_ORPHAN_EVENTS,
  ORPHAN_TTL_MS,
  recipientOf,
} from './messages.js';
import type { RedisLink } from './redis-link.js';
import type {
  CampaignSends,
  MessageRecord,
  MessageStore,
  PendingRcsSend,
  PendingSend,
  SentMessage,
} from './types.js';

/** Campaign recipients recorded per script: one script holds Redis for well under a millisecond. */
const CAMPAIGN_BATCH = 500;

/** Status rank and the append shared by the scripts. */
const COMMON = `local RANK = {sent = 1, delivered = 2, read = 3, failed = 4}
local function next_status(cur, ev)
  local e = cjson.decode(ev)
  if e.kind ~= 'status' or cur == 'failed' then return cur end
  if (RANK[e.status] or 0) > (RANK[cur] or 0) then return e.status end
  return cur
end
local function append(m, me, ev, max)
  if redis.call('llen', me) < max then redis.call('rpush', me, ev) end
  local st = next_status(redis.call('hget', m, 'status'), ev)
  redis.call('hset', m, 'status', st)
  local ttl = redis.call('pttl', m)
  if ttl > 0 then redis.call('pexpire', me, ttl) end
end
local function answer(m, me)
  return {redis.call('hget', m, 'rec'), redis.call('hget', m, 'status'), redis.call('lrange', me, 0, -1)}
end
local function adopt(m, me, pending, id, now)
  local p = cjson.decode(pending)
  local exp = tonumber(p.exp)
  p.exp = nil
  p.requested_at_ms = nil
  p.message_id = id
  redis.call('hset', m, 'rec', cjson.encode(p), 'status', 'sent')
  redis.call('pexpire', m, math.max(1, exp - now))
end
-- A pending send: an orphan for its recipient that arrived after the launch was asked for is adopted
-- (its record answered); else the send is queued for the first event to come.
local function pend(mp, mom, pending, now, retention, requested, prefix, max)
  while true do
    local o = redis.call('lpop', mom)
    if not o then break end
    local d = cjson.decode(o)
    local m = prefix .. 'm:' .. d.k
    local me = prefix .. 'me:' .. d.k
    local mo = prefix .. 'mo:' .. d.k
    if tonumber(d.at) >= requested and redis.call('exists', m) == 0 and redis.call('exists', mo) == 1 then
      adopt(m, me, pending, d.id, now)
      for _, ev in ipairs(redis.call('lrange', mo, 0, -1)) do append(m, me, ev, max) end
      redis.call('del', mo)
      return answer(m, me)
    end
  end
  redis.call('rpush', mp, pending)
  redis.call('pexpire', mp, retention)
  return false
end
`;

/**
 * A chat send: KEYS m, me, mo; ARGV rec, retention, max events, now, prefix. Events that came first are
 * adopted. A record a campaign's pending send made of this message's first event (a race: the webhook
 * outran the sender's answer) becomes this send's, and the campaign's send goes back to the head of its
 * recipient's queue (campaign recipients are digits: the key needs no encoding).
 */
const RECORD = `${COMMON}
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], 'rec', ARGV[1], 'status', 'sent')
  redis.call('pexpire', KEYS[1], ARGV[2])
  for _, ev in ipairs(redis.call('lrange', KEYS[3], 0, -1)) do append(KEYS[1], KEYS[2], ev, tonumber(ARGV[3])) end
  redis.call('del', KEYS[3])
else
  local old = cjson.decode(redis.call('hget', KEYS[1], 'rec'))
  if old.kind == 'campaign' and cjson.decode(ARGV[1]).kind ~= 'campaign' then
    local ttl = math.max(1, redis.call('pttl', KEYS[1]))
    local mp = ARGV[5] .. 'mp:' .. old.channel .. ':' .. old.to
    old.message_id = nil
    old.exp = tonumber(ARGV[4]) + ttl
    old.requested_at_ms = 0
    redis.call('lpush', mp, cjson.encode(old))
    redis.call('pexpire', mp, math.max(ttl, redis.call('pttl', mp)))
    redis.call('hset', KEYS[1], 'rec', ARGV[1])
  end
end
return answer(KEYS[1], KEYS[2])`;

/**
 * An event: KEYS m, me, mo, mp, mom; ARGV event, now, max events, orphan ttl, max orphan events, id,
 * encoded id, names a recipient ('1'). Unknown message: adopt the oldest live pending send of its
 * channel to its recipient, else hold as an orphan.
 */
const ADD_EVENT = `${COMMON}
local now = tonumber(ARGV[2])
if redis.call('exists', KEYS[1]) == 0 then
  local adopted = false
  if ARGV[8] == '1' then
    while true do
      local p = redis.call('lpop', KEYS[4])
      if not p then break end
      if tonumber(cjson.decode(p).exp) > now then
        adopt(KEYS[1], KEYS[2], p, ARGV[6], now)
        adopted = true
        break
      end
    end
  end
  if not adopted then
    local n = redis.call('llen', KEYS[3])
    if n < tonumber(ARGV[5]) then redis.call('rpush', KEYS[3], ARGV[1]) end
    if n == 0 then
      redis.call('pexpire', KEYS[3], ARGV[4])
      if ARGV[8] == '1' then
        redis.call('rpush', KEYS[5], cjson.encode({id = ARGV[6], k = ARGV[7], at = now}))
        redis.call('pexpire', KEYS[5], ARGV[4])
      end
    end
    return false
  end
end
append(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[3]))
return answer(KEYS[1], KEYS[2])`;

/**
 * A pending send: KEYS mp, mom; ARGV pending (JSON with exp), now, retention, requested at, prefix,
 * max events.
 */
const PENDING = `${COMMON}
return pend(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6]))`;

/**
 * A campaign's recipients: KEYS mp, mom for each in turn; ARGV the pending send without `to` (JSON with
 * exp), now, retention, requested at, prefix, max events, then the recipients. Answers the records
 * adopted at once.
 */
const CAMPAIGN = `${COMMON}
local now = tonumber(ARGV[2])
local send = cjson.decode(ARGV[1])
local out = {}
for i = 7, #ARGV do
  send.to = ARGV[i]
  local j = (i - 7) * 2
  local a = pend(KEYS[j + 1], KEYS[j + 2], cjson.encode(send), now, ARGV[3], tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6]))
  if a then out[#out + 1] = a end
end
return out`;

/** A saved campaign, taken once: KEYS mc. */
const TAKE = `local v = redis.call('get', KEYS[1])
if v then redis.call('del', KEYS[1]) end
return v`;

type Answer = [string, string, string[]] | null;

export class RedisMessageStore implements MessageStore {
  readonly #link: RedisLink;
  readonly #retentionMs: number;

  constructor(link: RedisLink, retentionMs: number) {
    this.#link = link;
    this.#retentionMs = retentionMs;
  }

  async recordSent(message: SentMessage): Promise<MessageRecord> {
    const k = enc(message.message_id);
    const res = (await this.#link.run('record_message', (r) =>
      r.eval(
        RECORD,
        3,
        this.#key('m', k),
        this.#key('me', k),
        this.#key('mo', k),
        JSON.stringify(message),
        this.#retentionMs,
        MAX_EVENTS_PER_MESSAGE,
        Date.now(),
        this.#link.prefix,
      ),
    )) as Answer;
    return parseAnswer(res) ?? { ...message, status: 'sent', events: [] };
  }

  async recordPendingRcs(send: PendingRcsSend): Promise<MessageRecord | undefined> {
    const now = Date.now();
    const pending: PendingSend = { ...send, channel: 'rcs' };
    const res = (await this.#link.run('record_message', (r) =>
      r.eval(
        PENDING,
        2,
        this.#recipientKey('mp', 'rcs', send.to),
        this.#recipientKey('mom', 'rcs', send.to),
        JSON.stringify({ ...pending, exp: now + this.#retentionMs }),
        now,
        this.#retentionMs,
        send.requested_at_ms,
        this.#link.prefix,
        MAX_EVENTS_PER_MESSAGE,
      ),
    )) as Answer;
    return parseAnswer(res);
  }

  async recordCampaign(campaign: CampaignSends): Promise<MessageRecord[]> {
    const { recipients, ...rest } = campaign;
    const out: MessageRecord[] = [];
    for (let i = 0; i < recipients.length; i += CAMPAIGN_BATCH) {
      const batch = recipients.slice(i, i + CAMPAIGN_BATCH);
      const now = Date.now();
      const send: Omit<PendingSend, 'to'> & { exp: number } = {
        tenant: rest.tenant,
        channel: rest.channel,
        kind: 'campaign',
        sent_at: rest.sent_at,
        campaign_id: rest.campaign_id,
        requested_at_ms: rest.requested_at_ms,
        exp: now + this.#retentionMs,
      };
      const keys = batch.flatMap((to) => [
        this.#recipientKey('mp', rest.channel, to),
        this.#recipientKey('mom', rest.channel, to),
      ]);
      const res = (await this.#link.run('record_message', (r) =>
        r.eval(
          CAMPAIGN,
          keys.length,
          ...keys,
          JSON.stringify(send),
          now,
          this.#retentionMs,
          rest.requested_at_ms,
          this.#link.prefix,
          MAX_EVENTS_PER_MESSAGE,
          ...batch,
        ),
      )) as Answer[] | null;
      for (const a of res ?? []) {
        const record = parseAnswer(a);
        if (record !== undefined) out.push(record);
      }
    }
    return out;
  }

  async saveCampaign(campaign: CampaignSends): Promise<void> {
    await this.#link.run('record_message', (r) =>
      r.set(this.#key('mc', enc(campaign.campaign_id)), JSON.stringify(campaign), 'PX', this.#retentionMs),
    );
  }

  async launchSavedCampaign(
    campaignId: string,
    requestedAtMs: number,
    sentAt: string,
  ): Promise<MessageRecord[] | undefined> {
    const saved = (await this.#link.run('record_message', (r) =>
      r.eval(TAKE, 1, this.#key('mc', enc(campaignId))),
    )) as string | null;
    if (saved === null || saved === undefined) return undefined;
    const campaign = JSON.parse(saved) as CampaignSends;
    return this.recordCampaign({ ...campaign, requested_at_ms: requestedAtMs, sent_at: sentAt });
  }

  async addEvent(event: MessagingEvent): Promise<MessageRecord | undefined> {
    const k = enc(event.message_id);
    const recipient = recipientOf(event.channel, eventNumber(event));
    const res = (await this.#link.run('message_event', (r) =>
      r.eval(
        ADD_EVENT,
        5,
        this.#key('m', k),
        this.#key('me', k),
        this.#key('mo', k),
        this.#recipientKey('mp', event.channel, recipient ?? '-'),
        this.#recipientKey('mom', event.channel, recipient ?? '-'),
        JSON.stringify(event),
        Date.now(),
        MAX_EVENTS_PER_MESSAGE,
        ORPHAN_TTL_MS,
        MAX_ORPHAN_EVENTS,
        event.message_id,
        k,
        recipient === undefined ? '0' : '1',
      ),
    )) as Answer;
    return parseAnswer(res);
  }

  async get(tenant: string, messageId: string): Promise<MessageRecord | undefined> {
    const k = enc(messageId);
    const res = await this.#link.run('get_message', async (r) => {
      const out = await r
        .multi()
        .hmget(this.#key('m', k), 'rec', 'status')
        .lrange(this.#key('me', k), 0, -1)
        .exec();
      const [rec, status] = (out?.[0]?.[1] ?? [null, null]) as (string | null)[];
      const events = (out?.[1]?.[1] ?? []) as string[];
      return rec === null || rec === undefined || status === null || status === undefined
        ? null
        : ([rec, status, events] as Answer);
    });
    const record = parseAnswer(res);
    return record?.tenant === tenant ? record : undefined;
  }

  async markSeen(key: string): Promise<boolean> {
    const ok = await this.#link.run('mark_seen', (r) =>
      r.set(this.#key('seen', enc(key)), '1', 'PX', this.#retentionMs, 'NX'),
    );
    return ok === 'OK';
  }

  #key(kind: string, encoded: string): string {
    return `${this.#link.prefix}${kind}:${encoded}`;
  }

  #recipientKey(kind: 'mp' | 'mom', channel: 'chat' | 'rcs', recipient: string): string {
    return this.#key(kind, `${channel}:${enc(recipient)}`);
  }
}

function enc(s: string): string {
  return encodeURIComponent(s);
}

function parseAnswer(res: Answer | undefined): MessageRecord | undefined {
  if (res === null || res === undefined || !Array.isArray(res)) return undefined;
  const [rec, status, events] = res;
  const sent = JSON.parse(rec) as SentMessage;
  return {
    ...sent,
    status: status as MessageRecord['status'],
    events: events.map((e) => JSON.parse(e) as MessagingEvent),
  };
}
