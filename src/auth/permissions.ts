/** Permissions are `<resource>:<action>` strings; either segment may be `*`, and `*` alone grants all. */
export const RESOURCES = [
  'evaluators',
  'evaluation',
  'containers',
  'data',
  'models',
  'logs',
  'inference',
  'metrics',
  'keys',
  'review',
  'prompts',
  'guards',
] as const;
/** `admin`: what only an administrator of a resource may do (settling reviewers' disagreements: review:admin). */
export const ACTIONS = ['read', 'write', 'admin'] as const;

export type Resource = (typeof RESOURCES)[number];
export type Action = (typeof ACTIONS)[number];
export type Permission = `${Resource}:${Action}`;

/** Returns an error message for a malformed permission string, or null when it is valid. */
export function permissionError(p: string): string | null {
  if (p === '*') return null;
  const parts = p.split(':');
  if (parts.length !== 2) return `permission '${p}' must look like <resource>:<action>`;
  const [resource, action] = parts as [string, string];
  if (resource !== '*' && !(RESOURCES as readonly string[]).includes(resource)) {
    return `unknown resource '${resource}' in '${p}'; known: ${RESOURCES.join(', ')} or *`;
  }
  if (action !== '*' && !(ACTIONS as readonly string[]).includes(action)) {
    return `unknown action '${action}' in '${p}'; known: ${ACTIONS.join(', ')} or *`;
  }
  return null;
}

export function grants(granted: readonly string[], required: Permission): boolean {
  const [resource, action] = required.split(':') as [string, string];
  return granted.some((g) => {
    if (g === '*') return true;
    const [r, a] = g.split(':');
    return (r === '*' || r === resource) && (a === '*' || a === action);
  });
}
