/** Where the dashboard's own endpoints live; nothing under it accepts an API key. */
export const DASHBOARD_API = '/dashboard/api';
