/**
 * The OpenAI Realtime stand-in's scripted tool calls: `tool=<name>{json}` in the session's instructions
 * makes its model call that tool, one call per caller turn, in order (connection.ts). The other
 * stand-ins script theirs as `call_tool=` (src/emulator/s2s/script.ts), which this does not match.
 */

/** A tool call the instructions script: `tool=<name>` with an optional JSON object right after it. */
export interface ScriptedToolCall {
  readonly name: string;
  readonly arguments: Record<string, unknown>;
}

/**
 * The tool calls scripted in instructions, in order: each `tool=<name>` (a-z, 0-9, _), optionally
 * followed at once by a JSON object of arguments (`tool=consult{"number":"4915112345678"}`). Text that
 * does not parse as an object leaves that call's arguments empty.
 */
export function scriptedToolCalls(instructions: string | undefined): ScriptedToolCall[] {
  const out: ScriptedToolCall[] = [];
  if (instructions === undefined) return out;
  const re = /\btool=([a-z0-9_]{1,64})/g;
  for (let m = re.exec(instructions); m !== null; m = re.exec(instructions)) {
    const end = m.index + m[0].length;
    const json = instructions[end] === '{' ? objectAt(instructions, end) : undefined;
    let args: Record<string, unknown> = {};
    if (json !== undefined) {
      try {
        const v: unknown = JSON.parse(json);
        if (typeof v === 'object' && v !== null && !Array.isArray(v)) args = v as Record<string, unknown>;
      } catch {}
      re.lastIndex = end + json.length;
    }
    out.push({ name: m[1]!, arguments: args });
  }
  return out;
}

/** The balanced `{...}` starting at `at` (strings and escapes respected), or undefined when it never closes. */
function objectAt(text: string, at: number): string | undefined {
  let depth = 0;
  let inString = false;
  for (let i = at; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return text.slice(at, i + 1);
  }
  return undefined;
}
