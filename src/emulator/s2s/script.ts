/**
 * A scripted tool call: `call_tool=NAME` in a stand-in's instructions (or prompt, or a user text) makes
 * its model call the tool NAME at the next user turn instead of answering, with the JSON object written
 * right after the name as arguments (`call_tool=consult{"number":"+15550100"}`), `{}` when none is.
 * Tests and a newcomer's bot use it to see a tool call round trip without a control hook.
 */

export interface ScriptedCall {
  readonly name: string;
  readonly args: Record<string, unknown>;
}

/** The tool call `text` scripts; undefined when it scripts none. Bad JSON arguments give `{}`. */
export function scriptedToolCall(text: string | undefined): ScriptedCall | undefined {
  const m = text === undefined ? null : /\bcall_tool=([A-Za-z_][A-Za-z0-9_.:-]{0,63})/.exec(text);
  if (m === null || text === undefined) return undefined;
  const name = m[1]!;
  const from = m.index + m[0].length;
  if (text[from] !== '{') return { name, args: {} };
  let depth = 0;
  let inString = false;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) {
      try {
        const args: unknown = JSON.parse(text.slice(from, i + 1));
        if (typeof args === 'object' && args !== null && !Array.isArray(args))
          return { name, args: args as Record<string, unknown> };
      } catch {}
      break;
    }
  }
  return { name, args: {} };
}
