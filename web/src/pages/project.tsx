import type { ReactNode } from 'react';
import { useApi } from '../api';
import { ErrorBox, Loading, SubNav } from '../components';
import { Link } from '../router';
import type { Project } from '../types';
import { ContainerPage, ContainersPage } from './containers';
import { DatasetPage, DatasetsPage } from './datasets';
import { EvaluatorEditor, EvaluatorsPage } from './evaluators';
import { GuardsPage } from './guards';
import { ModelsPage } from './models';
import { MonitorPage, MonitorsPage } from './monitors';
import { PlaygroundPage } from './playground';
import { ReviewSection } from './review';
import { RunPage } from './run';
import { RunsPage } from './runs';
import { SessionPage, SessionsPage } from './sessions';
import { SettingsPage } from './settings';
import { TracePage, TracesPage } from './traces';

type SectionPage = (project: Project, item: string | undefined, rest: string[]) => ReactNode;

/** Each section of a project, by its path segment: its list, or one item when the path names one. */
const sections: Record<string, SectionPage> = {
  runs: (p, item) => (item ? <RunPage project={p} id={item} /> : <RunsPage project={p} />),
  evaluators: (p, item) =>
    item ? <EvaluatorEditor project={p} id={item === 'new' ? null : item} /> : <EvaluatorsPage project={p} />,
  datasets: (p, item) => (item ? <DatasetPage project={p} id={item} /> : <DatasetsPage project={p} />),
  containers: (p, item) => (item ? <ContainerPage project={p} id={item} /> : <ContainersPage project={p} />),
  monitors: (p, item) => (item ? <MonitorPage project={p} id={item} /> : <MonitorsPage project={p} />),
  guards: (p, item) => <GuardsPage project={p} tab={item} />,
  traces: (p, item) => (item ? <TracePage project={p} id={item} /> : <TracesPage project={p} />),
  sessions: (p, item) => (item ? <SessionPage project={p} id={item} /> : <SessionsPage project={p} />),
  playground: (p) => <PlaygroundPage project={p} />,
  models: (p) => <ModelsPage project={p} />,
  review: (p, _item, rest) => <ReviewSection project={p} rest={rest} />,
  settings: (p) => <SettingsPage project={p} />,
};

/** A project's pages: /projects/:id/<section>[/<item>]. */
export function ProjectPage(props: { id: string; rest: string[] }) {
  const project = useApi<Project>(`/projects/${encodeURIComponent(props.id)}`);
  if (!project.data) return project.error ? <ErrorBox error={project.error} /> : <Loading />;
  const p = project.data;
  // A reviewer reviews and nothing else: the Review section is their whole project.
  const reviewer = p.role === 'reviewer';
  const [section = reviewer ? 'review' : 'runs', item] = props.rest;
  const page = reviewer && section !== 'review' ? undefined : sections[section];
  const missing = reviewer ? 'As a reviewer you can only review: open Review.' : 'No such page';
  const body: ReactNode = page ? page(p, item, props.rest.slice(1)) : <ErrorBox error={missing} />;
  return (
    <div className="page">
      <p className="crumbs">
        <Link to="/">Organizations</Link> / <Link to={`/orgs/${p.organization_id}`}>{p.organization}</Link> /
      </p>
      <h1>{p.name}</h1>
      <SubNav project={p.id} current={section} only={reviewer ? ['review'] : undefined} />
      {body}
    </div>
  );
}
