/** Module hooks for record-modules.mjs: reports each module loaded, then loads it as the next hook would. */
let port;

export function initialize(data) {
  port = data.port;
}

export async function load(url, context, next) {
  port.postMessage(url);
  return next(url, context);
}
