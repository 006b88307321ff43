/** Timestamps are ISO-8601 strings in UTC; JSON documents are stored as text. Same shape on both dialects. */
export interface OrganizationTable {
  id: string;
  name: string;
  created_at: string;
}

export interface ProjectTable {
  id: string;
  organization_id: string;
  name: string;
  created_at: string;
}

export interface ApiKeyTable {
  id: string;
  project_id: string;
  name: string;
  /** The first characters of the key, shown in listings so a user can tell keys apart. */
  prefix: string;
  /** HMAC-SHA256(pepper, key), hex. */
  hash: string;
  /** JSON array of permission strings. */
  permissions: string;
  created_by: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface ContainerTable {
  id: string;
  project_id: string;
  label: string;
  description: string | null;
  metadata: string;
  created_at: string;
  updated_at: string;
}

export interface EvaluatorTable {
  id: string;
  project_id: string;
  container_id: string | null;
  type: 'judge' | 'code';
  name: string;
  description: string | null;
  metadata: string;
  pass_threshold: number | null;
  mode: string;
  api: string | null;
  model: string | null;
  prompt: string | null;
  inference_parameters: string;
  source: string | null;
  /** JSON array of requirement specifiers, or null. */
  requirements: string | null;
  created_at: string;
  updated_at: string;
}

export interface MetaTable {
  key: string;
  value: string;
  updated_at: string;
}

export interface Database {
  organizations: OrganizationTable;
  projects: ProjectTable;
  api_keys: ApiKeyTable;
  containers: ContainerTable;
  evaluators: EvaluatorTable;
  evalgate_meta: MetaTable;
}
