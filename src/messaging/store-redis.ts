/**
 * Message records shared through Redis, so that a webhook post reaching any instance finds the send
 * another made, and a duplicate delivery is counted once whichever instances the two copies reach.
 *
 * Layout (prefix P, ids and numbers URI-encoded; <ch> is chat or rcs), every key expiring:
 *   P m:<id>           hash {rec (the send, JSON), status, req     retention from the send
 *                      (a pending send's: when it was asked for)}
 *   P me:<id>          list of event JSON, oldest first           as its m:<id>
 *   P seen:<key>       "1", set with the event it marks            retention
 *   P mp:<ch>:<to>     list of pending sends (JSON with `exp`)     PENDING_TTL_MS (a campaign's longer)
 *   P mr:<mobile>      a call's RCS send being launched (its id)   PENDING_TTL_MS
 *   P mo:<id>          events of an unknown message (list of JSON) ORPHAN_TTL_MS
 *   P mom:<ch>:<to>    first events held, by recipient             ORPHAN_TTL_MS
 *                      ({id, k, at (arrival), ts (sent)} JSON)
 *   P mc:<campaign>    a saved, unlaunched campaign (JSON)         retention
 * Each change is one Lua script, so two instances adding events to one message, or adopting for one
 * recipient, never interleave, and an event's dedupe key is set only with the event stored; a campaign's
 * recipients are recorded CAMPAIGN_BATCH to a script. (The scripts build the keys of an orphan they
 * adopt from the prefix: one Redis, not a cluster, as elsewhere in the store.)
 */

import type { RedisLink } from '../state/redis-link.js';
import type {
  CampaignOutcome,
  CampaignSends,
  EventOutcome,
  MessageRecord,
  MessageStore,
  PendingRcsSend,
  PendingSend,
  SentMessage,
} from './records.js';
import {
  CLOCK_SKEW_MS,
  campaignSend,
  dedupeKey,
  earlierStatusKeys,
  firstEventTime,
  MAX_CAMPAIGN_RECIPIENTS,
  MAX_EVENTS_PER_MESSAGE,
  MAX_ORPHAN_EVENTS,
  ORPHAN_TTL_MS,
  PENDING_TTL_MS,
  pendingTtlMs,
  reservationId,
} from './rules.js';
import type { MessagingEvent } from './types.js';

/** Campaign recipients recorded per script: one script holds Redis for well under a millisecond. */
const CAMPAIGN_BATCH = 500;

/** Status rank, the append and the adoption shared by the scripts. */
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
local function adopt(m, pending, id, retention)
  local p = cjson.decode(pending)
  local req = p.requested_at_ms
  p.exp = nil
  p.requested_at_ms = nil
  p.message_id = id
  redis.call('hset', m, 'rec', cjson.encode(p), 'status', 'sent')
  if req then redis.call('hset', m, 'req', req) end
  redis.call('pexpire', m, retention)
end
-- Keeps a list's expiry at least ttl.
local function keep_for(key, ttl)
  if redis.call('pttl', key) < ttl then redis.call('pexpire', key, ttl) end
end
-- A pending send: a first event held for its recipient that was sent and arrived after the launch was
-- asked for (less the skew) is adopted (its record answered); else the send is queued for the first
-- event to come (at the head of the queue when head). Entries of orphans adopted or gone are dropped on
-- the way.
local function pend(mp, mom, pending, now, ttl, since, prefix, max, retention, head)
  for _, o in ipairs(redis.call('lrange', mom, 0, -1)) do
    local d = cjson.decode(o)
    local m = prefix .. 'm:' .. d.k
    local me = prefix .. 'me:' .. d.k
    local mo = prefix .. 'mo:' .. d.k
    if redis.call('exists', m) == 1 or redis.call('exists', mo) == 0 then
      redis.call('lrem', mom, 1, o)
    elseif tonumber(d.at) >= since and tonumber(d.ts) >= since then
      redis.call('lrem', mom, 1, o)
      adopt(m, pending, d.id, retention)
      for _, ev in ipairs(redis.call('lrange', mo, 0, -1)) do append(m, me, ev, max) end
      redis.call('del', mo)
      return answer(m, me)
    end
  end
  if head then redis.call('lpush', mp, pending) else redis.call('rpush', mp, pending) end
  keep_for(mp, ttl)
  return false
end
`;

/**
 * A chat send: KEYS m, me, mo; ARGV rec, retention, max events, now, prefix, pending ttl, clock skew.
 * Events that came first are adopted. A record a campaign's pending send made of this message's first
 * event (a race: the webhook outran the sender's answer) becomes this send's, and the campaign's send,
 * with the time its launch was asked for (the record's req), is pended again: it adopts its own
 * message's first event if one is held, else waits at the head of its recipient's queue (campaign
 * recipients are digits: the keys need no encoding).
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
    local now = tonumber(ARGV[4])
    local ttl = tonumber(ARGV[6])
    local req = tonumber(redis.call('hget', KEYS[1], 'req')) or now
    redis.call('hset', KEYS[1], 'rec', ARGV[1])
    redis.call('hdel', KEYS[1], 'req')
    old.message_id = nil
    old.exp = now + ttl
    old.requested_at_ms = req
    pend(ARGV[5] .. 'mp:' .. old.channel .. ':' .. old.to, ARGV[5] .. 'mom:' .. old.channel .. ':' .. old.to,
      cjson.encode(old), now, ttl, req - tonumber(ARGV[7]), ARGV[5], tonumber(ARGV[3]), ARGV[2], true)
  end
end
return answer(KEYS[1], KEYS[2])`;

/**
 * An event: KEYS m, me, mo, mp, mom, seen, then the seen keys of the message's sent, delivered and
 * read; ARGV event, now, max events, orphan ttl, max orphan events, id, encoded id, names a recipient
 * ('1'), its time when it may be a first event (status sent or failed; '' when not), clock skew,
 * retention, a failed ('1': a first event only when nothing else of its message was seen). Answers {0}
 * for a duplicate, {1} when held as an orphan, else {2, rec, status, events, the events added}. The
 * dedupe key is set as the last step, once the event is stored (a script that fails partway leaves the
 * event unseen, and the provider's retry brings it). Unknown message: a first event adopts the oldest
 * live pending send of its channel to its recipient asked for no later than it was sent (less the
 * skew); else the event is held as an orphan.
 */
const ADD_EVENT = `${COMMON}
local now = tonumber(ARGV[2])
if redis.call('exists', KEYS[6]) == 1 then return {0} end
local added = {}
local first = ARGV[8] == '1' and ARGV[9] ~= ''
if first and ARGV[12] == '1' and (redis.call('exists', KEYS[3]) == 1 or redis.call('exists', KEYS[7], KEYS[8], KEYS[9]) > 0) then
  first = false
end
if redis.call('exists', KEYS[1]) == 0 then
  local taken = false
  if first then
    local latest = tonumber(ARGV[9]) + tonumber(ARGV[10])
    local rest = {}
    local longest = 0
    local items = redis.call('lrange', KEYS[4], 0, -1)
    for _, p in ipairs(items) do
      local d = cjson.decode(p)
      local exp = tonumber(d.exp)
      if exp > now then
        if not taken and tonumber(d.requested_at_ms) <= latest then
          taken = p
        else
          rest[#rest + 1] = p
          if exp - now > longest then longest = exp - now end
        end
      end
    end
    if #rest < #items then
      redis.call('del', KEYS[4])
      for _, p in ipairs(rest) do redis.call('rpush', KEYS[4], p) end
      if #rest > 0 then redis.call('pexpire', KEYS[4], longest) end
    end
  end
  if not taken then
    local n = redis.call('llen', KEYS[3])
    if n < tonumber(ARGV[5]) then redis.call('rpush', KEYS[3], ARGV[1]) end
    if n == 0 then redis.call('pexpire', KEYS[3], ARGV[4]) end
    if first then
      redis.call('rpush', KEYS[5], cjson.encode({id = ARGV[6], k = ARGV[7], at = now, ts = tonumber(ARGV[9])}))
      redis.call('pexpire', KEYS[5], ARGV[4])
    end
    redis.call('set', KEYS[6], '1', 'PX', ARGV[11])
    return {1}
  end
  adopt(KEYS[1], taken, ARGV[6], ARGV[11])
  -- The message's later events that came first join it.
  for _, ev in ipairs(redis.call('lrange', KEYS[3], 0, -1)) do
    append(KEYS[1], KEYS[2], ev, tonumber(ARGV[3]))
    added[#added + 1] = ev
  end
  redis.call('del', KEYS[3])
end
append(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[3]))
added[#added + 1] = ARGV[1]
local a = answer(KEYS[1], KEYS[2])
redis.call('set', KEYS[6], '1', 'PX', ARGV[11])
return {2, a[1], a[2], a[3], added}`;

/**
 * A call's RCS send: KEYS mp, mom, mr; ARGV pending (JSON with exp), now, pending ttl, since (asked
 * for, less the skew), prefix, max events, retention, reservation ('' for none). Ends the reservation.
 */
const PENDING = `${COMMON}
if ARGV[8] ~= '' and redis.call('get', KEYS[3]) == ARGV[8] then redis.call('del', KEYS[3]) end
return pend(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6]), ARGV[7])`;

/**
 * Reserves an RCS recipient for a call's send: KEYS mp, mr; ARGV now, reservation, ttl. Refused (0)
 * while a reservation holds it or any live pending send (a call's or a campaign's) waits for it.
 */
const RESERVE = `if redis.call('exists', KEYS[2]) == 1 then return 0 end
local now = tonumber(ARGV[1])
for _, p in ipairs(redis.call('lrange', KEYS[1], 0, -1)) do
  if tonumber(cjson.decode(p).exp) > now then return 0 end
end
redis.call('set', KEYS[2], ARGV[2], 'PX', ARGV[3])
return 1`;

/** Ends a reservation, only its own: KEYS mr; ARGV reservation. */
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]) end
return 1`;

/**
 * A campaign's recipients: KEYS mp, mom, mr for each in turn; ARGV the pending send without `to` (JSON
 * with exp), now, pending ttl, since (asked for, less the skew), prefix, max events, retention, RCS
 * ('1': a recipient a call's send holds, reserved or waiting, is skipped), then the recipients. Answers
 * the number skipped, then the records adopted at once.
 */
const CAMPAIGN = `${COMMON}
local now = tonumber(ARGV[2])
local send = cjson.decode(ARGV[1])
local out = {0}
local function held_for_call(mp, mr)
  if redis.call('exists', mr) == 1 then return true end
  for _, p in ipairs(redis.call('lrange', mp, 0, -1)) do
    local d = cjson.decode(p)
    if d.kind ~= 'campaign' and tonumber(d.exp) > now then return true end
  end
  return false
end
for i = 9, #ARGV do
  send.to = ARGV[i]
  local j = (i - 9) * 3
  if ARGV[8] == '1' and held_for_call(KEYS[j + 1], KEYS[j + 3]) then
    out[1] = out[1] + 1
  else
    local a = pend(KEYS[j + 1], KEYS[j + 2], cjson.encode(send), now, tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6]), ARGV[7])
    if a then out[#out + 1] = a end
  end
end
return out`;

/** A saved campaign, taken once: KEYS mc. */
const TAKE = `local v = redis.call('get', KEYS[1])
if v then redis.call('del', KEYS[1]) end
return v`;

type Answer = [string, string, string[]] | null;
type EventAnswer = [0] | [1] | [2, string, string, string[], string[]];

export class RedisMessageStore implements MessageStore {
  /** The memory store's limit, kept here too: a campaign accepted by one store is by the other. */
  readonly maxCampaignRecipients = MAX_CAMPAIGN_RECIPIENTS;
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
        PENDING_TTL_MS,
        CLOCK_SKEW_MS,
      ),
    )) as Answer;
    return parseAnswer(res) ?? { ...message, status: 'sent', events: [] };
  }

  async reserveRcs(mobile: string): Promise<string | undefined> {
    const id = reservationId();
    const ok = await this.#link.run('record_message', (r) =>
      r.eval(
        RESERVE,
        2,
        this.#recipientKey('mp', 'rcs', mobile),
        this.#key('mr', enc(mobile)),
        Date.now(),
        id,
        PENDING_TTL_MS,
      ),
    );
    return ok === 1 ? id : undefined;
  }

  async releaseRcs(mobile: string, reservation: string): Promise<void> {
    await this.#link.run('record_message', (r) =>
      r.eval(RELEASE, 1, this.#key('mr', enc(mobile)), reservation),
    );
  }

  async recordPendingRcs(send: PendingRcsSend, reservation?: string): Promise<MessageRecord | undefined> {
    const now = Date.now();
    const pending: PendingSend = { ...send, channel: 'rcs' };
    const res = (await this.#link.run('record_message', (r) =>
      r.eval(
        PENDING,
        3,
        this.#recipientKey('mp', 'rcs', send.to),
        this.#recipientKey('mom', 'rcs', send.to),
        this.#key('mr', enc(send.to)),
        JSON.stringify({ ...pending, exp: now + PENDING_TTL_MS }),
        now,
        PENDING_TTL_MS,
        send.requested_at_ms - CLOCK_SKEW_MS,
        this.#link.prefix,
        MAX_EVENTS_PER_MESSAGE,
        this.#retentionMs,
        reservation ?? '',
      ),
    )) as Answer;
    return parseAnswer(res);
  }

  async recordCampaign(campaign: CampaignSends): Promise<CampaignOutcome> {
    const { recipients, ...rest } = campaign;
    const ttl = pendingTtlMs(recipients.length);
    const out: MessageRecord[] = [];
    let skipped = 0;
    for (let i = 0; i < recipients.length; i += CAMPAIGN_BATCH) {
      const batch = recipients.slice(i, i + CAMPAIGN_BATCH);
      const now = Date.now();
      const send: Omit<PendingSend, 'to'> & { exp: number } = { ...campaignSend(campaign), exp: now + ttl };
      const keys = batch.flatMap((to) => [
        this.#recipientKey('mp', rest.channel, to),
        this.#recipientKey('mom', rest.channel, to),
        this.#key('mr', enc(to)),
      ]);
      const res = (await this.#link.run('record_message', (r) =>
        r.eval(
          CAMPAIGN,
          keys.length,
          ...keys,
          JSON.stringify(send),
          now,
          ttl,
          rest.requested_at_ms - CLOCK_SKEW_MS,
          this.#link.prefix,
          MAX_EVENTS_PER_MESSAGE,
          this.#retentionMs,
          rest.channel === 'rcs' ? '1' : '0',
          ...batch,
        ),
      )) as [number, ...Answer[]] | null;
      const [n, ...answers] = res ?? [0];
      skipped += n;
      for (const a of answers) {
        const record = parseAnswer(a);
        if (record !== undefined) out.push(record);
      }
    }
    return { adopted: out, skipped };
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
  ): Promise<CampaignOutcome | undefined> {
    const saved = (await this.#link.run('record_message', (r) =>
      r.eval(TAKE, 1, this.#key('mc', enc(campaignId))),
    )) as string | null;
    if (saved === null || saved === undefined) return undefined;
    const campaign = JSON.parse(saved) as CampaignSends;
    try {
      return await this.recordCampaign({ ...campaign, requested_at_ms: requestedAtMs, sent_at: sentAt });
    } catch (err) {
      // Taken but not (wholly) recorded: the caller logs it with the campaign id; nothing is held to retry.
      throw new Error(`saved campaign ${campaignId} taken but not recorded: ${(err as Error).message}`);
    }
  }

  async addEvent(event: MessagingEvent, recipient: string | undefined): Promise<EventOutcome> {
    const k = enc(event.message_id);
    const sentAt = firstEventTime(event);
    const res = (await this.#link.run('message_event', (r) =>
      r.eval(
        ADD_EVENT,
        9,
        this.#key('m', k),
        this.#key('me', k),
        this.#key('mo', k),
        this.#recipientKey('mp', event.channel, recipient ?? '-'),
        this.#recipientKey('mom', event.channel, recipient ?? '-'),
        this.#key('seen', enc(dedupeKey(event))),
        ...earlierStatusKeys(event).map((key) => this.#key('seen', enc(key))),
        JSON.stringify(event),
        Date.now(),
        MAX_EVENTS_PER_MESSAGE,
        ORPHAN_TTL_MS,
        MAX_ORPHAN_EVENTS,
        event.message_id,
        k,
        recipient === undefined ? '0' : '1',
        sentAt === undefined ? '' : sentAt,
        CLOCK_SKEW_MS,
        this.#retentionMs,
        event.kind === 'status' && event.status === 'failed' ? '1' : '0',
      ),
    )) as EventAnswer;
    if (res[0] === 0) return { fresh: false, record: undefined, added: [] };
    if (res[0] === 1) return { fresh: true, record: undefined, added: [] };
    const [, rec, status, events, added] = res;
    return {
      fresh: true,
      record: parseAnswer([rec, status, events]),
      added: added.map((e) => JSON.parse(e) as MessagingEvent),
    };
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
