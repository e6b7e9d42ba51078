/**
 * Every scope the control plane checks, in one list: `npm run token` grants them all by default, and so
 * does the development sign-in link `npm start` prints for the console.
 */
export const ALL_SCOPES = [
  'media:manage',
  'sessions:read',
  'calls:control',
  'messages:read',
  'messages:manage',
  'media:call',
  'sessions:listen',
  'recordings:read',
  'recordings:manage',
] as const;
