import type { ReactNode } from 'react';
import { useApi } from '../api';
import { ErrorBox, Loading, SubNav } from '../components';
import { Link } from '../router';
import type { Project } from '../types';
import { ContainerPage, ContainersPage } from './containers';
import { DatasetPage, DatasetsPage } from './datasets';
import { EvaluatorEditor, EvaluatorsPage } from './evaluators';
import { ModelsPage } from './models';
import { MonitorPage, MonitorsPage } from './monitors';
import { ReviewSection } from './review';
import { RunPage } from './run';
import { RunsPage } from './runs';
import { SessionPage, SessionsPage } from './sessions';
import { SettingsPage } from './settings';
import { TracePage, TracesPage } from './traces';

/** A project's pages: /projects/:id/<section>[/<item>]. */
export function ProjectPage(props: { id: string; rest: string[] }) {
  const project = useApi<Project>(`/projects/${encodeURIComponent(props.id)}`);
  if (!project.data) return project.error ? <ErrorBox error={project.error} /> : <Loading />;
  const p = project.data;
  const [section = 'runs', item] = props.rest;
  let body: ReactNode;
  switch (section) {
    case 'runs':
      body = item ? <RunPage project={p} id={item} /> : <RunsPage project={p} />;
      break;
    case 'evaluators':
      body = item ? (
        <EvaluatorEditor project={p} id={item === 'new' ? null : item} />
      ) : (
        <EvaluatorsPage project={p} />
      );
      break;
    case 'datasets':
      body = item ? <DatasetPage project={p} id={item} /> : <DatasetsPage project={p} />;
      break;
    case 'containers':
      body = item ? <ContainerPage project={p} id={item} /> : <ContainersPage project={p} />;
      break;
    case 'monitors':
      body = item ? <MonitorPage project={p} id={item} /> : <MonitorsPage project={p} />;
      break;
    case 'traces':
      body = item ? <TracePage project={p} id={item} /> : <TracesPage project={p} />;
      break;
    case 'sessions':
      body = item ? <SessionPage project={p} id={item} /> : <SessionsPage project={p} />;
      break;
    case 'models':
      body = <ModelsPage project={p} />;
      break;
    case 'review':
      body = <ReviewSection project={p} rest={props.rest.slice(1)} />;
      break;
    case 'settings':
      body = <SettingsPage project={p} />;
      break;
    default:
      body = <ErrorBox error="No such page" />;
  }
  return (
    <div className="page">
      <p className="crumbs">
        <Link to="/">Organizations</Link> / <Link to={`/orgs/${p.organization_id}`}>{p.organization}</Link> /
      </p>
      <h1>{p.name}</h1>
      <SubNav project={p.id} current={section} />
      {body}
    </div>
  );
}
