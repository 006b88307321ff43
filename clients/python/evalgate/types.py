"""Request and response models of the Evalgate API, generated from its OpenAPI document.

Do not edit: run ``python scripts/generate_types.py <server>/openapi.json`` (tests/test_types.py fails
when this file differs from what the served document gives).
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union


class Health(TypedDict):
    ok: bool


class Budget(TypedDict):
    """Budget"""

    #: Most the scope may spend per period, in USD (0 stops every call)
    limit_usd: float
    #: `day` and `month`: calendar periods in UTC; `total`: never resets
    period: Union[Literal["day"], Literal["month"], Literal["total"]]


class Spend(TypedDict):
    """Spend"""

    #: Start of the current period (the Unix epoch for `total`)
    period_start: str
    #: Spent in the current period, in USD
    used_usd: float
    limit_usd: float
    resets_at: Optional[str]


class CreatedApiKey(TypedDict):
    object: Literal["api_key"]
    id: str
    project_id: str
    name: str
    #: First characters of the key, to tell keys apart
    prefix: str
    permissions: List[str]
    created_by: Optional[str]
    created_at: str
    last_used_at: Optional[str]
    revoked_at: Optional[str]
    cache_ttl_seconds: Optional[int]
    budget: Optional[Budget]
    spend: Optional[Spend]
    #: The secret key; shown only in this response
    key: str


class ApiKey(TypedDict):
    object: Literal["api_key"]
    id: str
    project_id: str
    name: str
    #: First characters of the key, to tell keys apart
    prefix: str
    permissions: List[str]
    created_by: Optional[str]
    created_at: str
    last_used_at: Optional[str]
    revoked_at: Optional[str]
    cache_ttl_seconds: Optional[int]
    budget: Optional[Budget]
    spend: Optional[Spend]


class ProjectBudget(TypedDict):
    object: Literal["project_budget"]
    project_id: str
    budget: Optional[Budget]
    spend: Optional[Spend]


class Container(TypedDict):
    object: Literal["container"]
    id: str
    project_id: str
    label: str
    description: Optional[str]
    metadata: Dict[str, Any]
    created_at: str
    updated_at: str
    #: Whether calls without a session header, conversation or trace join sessions by conversation continuity (default true)
    session_continuity: bool


class ContainerDeleted(TypedDict):
    object: Literal["container"]
    id: str
    deleted: Literal[True]


class TaskLogUsage(TypedDict, total=False):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class TaskLogError(TypedDict):
    code: str
    message: str


class _TaskLogRequired(TypedDict):
    object: Literal["task_log"]
    id: str
    project_id: str
    container_id: str
    #: Strictly increasing per container, from 1, without gaps
    seq: int
    model: str
    #: The request messages
    input: Any
    output: Optional[str]
    request: Any
    response: Any
    usage: Optional[TaskLogUsage]
    latency_ms: float
    #: USD
    cost: float
    status: Union[Literal["success"], Literal["error"]]
    error: Optional[TaskLogError]
    metadata: Dict[str, Any]
    created_at: str


class TaskLog(_TaskLogRequired, total=False):
    session_id: Optional[str]
    prompt_id: Optional[str]
    prompt_version: Optional[int]
    trace_id: Optional[str]
    span_id: Optional[str]


class LogImport(TypedDict):
    object: Literal["task_log.import"]
    container_id: str
    imported: int
    first_seq: Optional[int]
    last_seq: Optional[int]


class Dataset(TypedDict):
    object: Literal["dataset"]
    id: str
    project_id: str
    label: str
    description: Optional[str]
    metadata: Dict[str, Any]
    #: Items of the latest version
    item_count: int
    #: The latest version (1: as created)
    version: int
    created_at: str
    updated_at: str


class DatasetDeleted(TypedDict):
    object: Literal["dataset"]
    id: str
    deleted: Literal[True]


class _DatasetItemRequired(TypedDict):
    object: Literal["dataset.item"]
    #: 0-based position in the dataset
    position: int
    #: The item's id: given or made when it was added, else the row's own id field, or <dataset id>:<position>
    id: str
    #: The row as uploaded
    data: Dict[str, Any]


class DatasetItem(_DatasetItemRequired, total=False):
    #: The splits the item is in (absent: none)
    splits: List[str]
    #: What the item was made from: {kind, id, …}
    origin: Dict[str, Any]


class DatasetItemsChanged(TypedDict):
    object: Literal["dataset.change"]
    dataset_id: str
    #: The version the change made
    version: int
    #: Items of that version
    item_count: int
    #: The items written (added or new versions)
    items: List[DatasetItem]


class DatasetItemDeleted(TypedDict):
    object: Literal["dataset.item"]
    id: str
    deleted: Literal[True]
    dataset_id: str
    #: The version the removal made
    version: int


class DatasetVersion(TypedDict):
    object: Literal["dataset.version"]
    dataset_id: str
    version: int
    item_count: int
    added: int
    changed: int
    removed: int
    #: The API key that made it
    created_by: Optional[str]
    created_at: str


class DatasetDiffChangedItem(TypedDict):
    id: str
    before: DatasetItem
    after: DatasetItem


class DatasetDiff(TypedDict):
    object: Literal["dataset.diff"]
    dataset_id: str
    from_version: int
    to_version: int
    added: List[DatasetItem]
    removed: List[DatasetItem]
    changed: List[DatasetDiffChangedItem]
    #: True when more entries than `limit` differ
    truncated: bool


class Model(TypedDict):
    #: The slug to send as `model`
    id: str
    object: Literal["model"]
    #: Unix seconds
    created: int
    #: openai, anthropic, or the owning project id
    owned_by: str
    kind: Union[Literal["frontier"], Literal["registered"]]
    model_id: Optional[str]
    label: Optional[str]
    #: Wire API of the upstream: an OpenAI-compatible server (vLLM, Ollama, …), Anthropic Messages, or Google's Gemini API (generateContent; base_url names the API version, e.g. https://generativelanguage.googleapis.com/v1beta)
    provider: Union[Literal["openai-compatible"], Literal["anthropic"], Literal["gemini"]]
    base_url: Optional[str]
    upstream_model: str
    has_api_key: bool
    api_key_last4: Optional[str]
    input_price_per_mtok: Optional[float]
    output_price_per_mtok: Optional[float]
    context_window: Optional[int]
    default_parameters: Dict[str, Any]
    fallbacks: List[str]
    requests_per_minute: Optional[int]
    tokens_per_minute: Optional[int]
    #: What the upstream speaks for generation: chat (completions, the default) or responses (Responses-API calls go to it natively). Anthropic models speak Messages and Gemini models generateContent whatever this says.
    api: Union[Literal["chat"], Literal["responses"]]
    cache_ttl_seconds: Optional[int]
    price_as_of: Optional[str]
    price_source: Optional[str]
    metadata: Dict[str, Any]
    created_at: Optional[str]
    updated_at: Optional[str]


class ModelDeleted(TypedDict):
    object: Literal["model"]
    id: str
    deleted: Literal[True]


class JudgeEvaluatorScaleVariant1(TypedDict):
    type: Literal["pass_fail"]


class JudgeEvaluatorScaleVariant2(TypedDict):
    type: Literal["ordinal"]
    min: int
    max: int


class JudgeEvaluatorScaleVariant3(TypedDict):
    type: Literal["continuous"]
    min: Optional[float]
    max: Optional[float]


class JudgeEvaluatorScaleVariant4(TypedDict):
    type: Literal["labels"]
    labels: List[str]


class _JudgeEvaluatorRequired(TypedDict):
    object: Literal["evaluator.judge"]
    project_id: str
    container_id: Optional[str]
    container: Optional[str]
    id: str
    name: str
    description: str
    created_at: str
    updated_at: str
    metadata: Dict[str, Any]
    pass_threshold: Optional[float]
    mode: str
    api: Optional[str]
    model: str
    prompt: str
    inference_parameters: Dict[str, Any]


class JudgeEvaluator(_JudgeEvaluatorRequired, total=False):
    #: pass_fail, ordinal {min, max} (integers), continuous {min, max} or labels {labels}
    scale: Union[JudgeEvaluatorScaleVariant1, JudgeEvaluatorScaleVariant2, JudgeEvaluatorScaleVariant3, JudgeEvaluatorScaleVariant4]
    template: Optional[str]


class _CodeEvaluatorRequired(TypedDict):
    object: Literal["evaluator.code"]
    project_id: str
    container_id: Optional[str]
    container: Optional[str]
    id: str
    name: str
    description: str
    created_at: str
    updated_at: str
    metadata: Dict[str, Any]
    pass_threshold: Optional[float]
    mode: str
    source: str
    requirements: List[str]


class CodeEvaluator(_CodeEvaluatorRequired, total=False):
    #: pass_fail, ordinal {min, max} (integers), continuous {min, max} or labels {labels}
    scale: Union[JudgeEvaluatorScaleVariant1, JudgeEvaluatorScaleVariant2, JudgeEvaluatorScaleVariant3, JudgeEvaluatorScaleVariant4]
    template: Optional[str]


class GraderEvaluatorInputItemContentVariant1(TypedDict):
    type: Literal["input_text", "output_text"]
    text: str


class _GraderEvaluatorInputItemContentVariant2Required(TypedDict):
    type: Literal["input_image"]
    image_url: str


class GraderEvaluatorInputItemContentVariant2(_GraderEvaluatorInputItemContentVariant2Required, total=False):
    detail: str


class GraderEvaluatorInputItemContentVariant3InputAudio(TypedDict):
    data: str
    format: Literal["mp3", "wav"]


class GraderEvaluatorInputItemContentVariant3(TypedDict):
    type: Literal["input_audio"]
    input_audio: GraderEvaluatorInputItemContentVariant3InputAudio


class _GraderEvaluatorInputItemRequired(TypedDict):
    role: Literal["user", "assistant", "system", "developer"]
    content: Union[str, Union[GraderEvaluatorInputItemContentVariant1, GraderEvaluatorInputItemContentVariant2, GraderEvaluatorInputItemContentVariant3], List[Union[str, Union[GraderEvaluatorInputItemContentVariant1, GraderEvaluatorInputItemContentVariant2, GraderEvaluatorInputItemContentVariant3]]]]


class GraderEvaluatorInputItem(_GraderEvaluatorInputItemRequired, total=False):
    type: Literal["message"]


class GraderEvaluatorSamplingParams(TypedDict, total=False):
    max_completions_tokens: Optional[int]
    max_completion_tokens: Optional[int]
    reasoning_effort: Optional[Literal["none", "minimal", "low", "medium", "high", "xhigh"]]
    seed: Optional[int]
    temperature: Optional[float]
    top_p: Optional[float]


class _GraderEvaluatorRequired(TypedDict):
    object: Literal["evaluator.string_check", "evaluator.text_similarity", "evaluator.score_model", "evaluator.label_model"]
    project_id: str
    container_id: Optional[str]
    container: Optional[str]
    id: str
    name: str
    description: str
    created_at: str
    updated_at: str
    metadata: Dict[str, Any]
    pass_threshold: Optional[float]
    mode: str
    model: Optional[str]
    input: Union[str, List[GraderEvaluatorInputItem]]
    reference: Optional[str]
    operation: Optional[str]
    evaluation_metric: Optional[str]
    embedding_model: Optional[str]
    range: Optional[List[float]]
    sampling_params: Optional[GraderEvaluatorSamplingParams]
    labels: Optional[List[str]]
    passing_labels: Optional[List[str]]


class GraderEvaluator(_GraderEvaluatorRequired, total=False):
    #: pass_fail, ordinal {min, max} (integers), continuous {min, max} or labels {labels}
    scale: Union[JudgeEvaluatorScaleVariant1, JudgeEvaluatorScaleVariant2, JudgeEvaluatorScaleVariant3, JudgeEvaluatorScaleVariant4]
    template: Optional[str]


class _EvaluatorVariant4Required(TypedDict):
    object: Literal["evaluator.tool_call_match", "evaluator.trajectory_length"]
    project_id: str
    container_id: Optional[str]
    container: Optional[str]
    id: str
    name: str
    description: str
    created_at: str
    updated_at: str
    metadata: Dict[str, Any]
    pass_threshold: Optional[float]
    mode: str
    match_mode: Optional[str]
    arguments_match: Optional[str]
    expected_field: Optional[str]
    tool_schemas: Optional[Dict[str, Any]]
    length_of: Optional[str]
    min_length: Optional[int]
    max_length: Optional[int]


class EvaluatorVariant4(_EvaluatorVariant4Required, total=False):
    #: pass_fail, ordinal {min, max} (integers), continuous {min, max} or labels {labels}
    scale: Union[JudgeEvaluatorScaleVariant1, JudgeEvaluatorScaleVariant2, JudgeEvaluatorScaleVariant3, JudgeEvaluatorScaleVariant4]
    template: Optional[str]


Evaluator = Union[JudgeEvaluator, CodeEvaluator, GraderEvaluator, EvaluatorVariant4]


class EvaluatorDeleted(TypedDict):
    object: Literal["evaluator"]
    id: str
    deleted: Literal[True]


class RunDataError(TypedDict):
    code: str
    message: str


class _DatasetDataSourceRequired(TypedDict):
    type: Literal["dataset"]
    dataset: str
    range: str


class DatasetDataSource(_DatasetDataSourceRequired, total=False):
    """dataset data source"""

    #: type=dataset: the version read
    version: int
    #: type=dataset: the split read
    split: str


class ContainerDataSource(TypedDict):
    """container data source"""

    type: Literal["container"]
    container: str
    range: str


class GenerateDataSourcePromptsItem(TypedDict):
    id: str
    name: str
    version: int
    label: Optional[str]


class _GenerateDataSourceRequired(TypedDict):
    type: Literal["generate"]
    models: List[str]
    range: str


class GenerateDataSource(_GenerateDataSourceRequired, total=False):
    """generate data source"""

    #: type=generate: an experiment’s prompt versions
    prompts: List[GenerateDataSourcePromptsItem]
    #: type=generate: the sampling parameters the side gave
    parameters: Dict[str, Any]


class SessionsDataSource(TypedDict):
    """sessions data source"""

    type: Literal["sessions"]
    container: str
    range: str


class TracesDataSource(TypedDict):
    """traces data source"""

    type: Literal["traces"]
    container: str
    range: str


class ToolStepsDataSource(TypedDict):
    """tool_steps data source"""

    type: Literal["tool_steps"]
    container: str
    range: str


class _SimulateDataSourceRequired(TypedDict):
    type: Literal["simulate"]
    models: List[str]
    range: str


class SimulateDataSource(_SimulateDataSourceRequired, total=False):
    """simulate data source"""

    user_model: str
    max_turns: int
    tools: str


class RunDataResultsOverall(TypedDict):
    avg_score: Optional[float]
    avg_accuracy: Optional[float]


class RunDataResultsPerModelItemPerEvalValue(TypedDict):
    accuracy: Optional[float]
    avg_score: Optional[float]
    num_total: Optional[int]
    num_errors: Optional[int]
    num_failed: Optional[int]
    num_passed: Optional[int]
    num_scored: Optional[int]
    num_missing: Optional[int]
    avg_accuracy: Optional[float]
    break_reason: Optional[str]
    expected_count: Optional[int]


class _RunDataResultsPerModelItemRequired(TypedDict):
    model: Optional[Dict[str, Any]]
    per_eval: Optional[Dict[str, Optional[RunDataResultsPerModelItemPerEvalValue]]]
    avg_score: Optional[float]
    avg_accuracy: Optional[float]
    launch_index: Optional[int]
    launch_call_id: Optional[str]


class RunDataResultsPerModelItem(_RunDataResultsPerModelItemRequired, total=False):
    prompt: GenerateDataSourcePromptsItem


class RunDataResults(TypedDict):
    overall: Optional[RunDataResultsOverall]
    metadata: Optional[Dict[str, Any]]
    per_model: Optional[List[RunDataResultsPerModelItem]]
    launch_count: Optional[int]


class RunData(TypedDict):
    object: Literal["evaluation.run"]
    id: str
    name: Optional[str]
    #: queued, running, completed, error or cancelled
    status: str
    created_at: str
    started_at: Optional[str]
    finished_at: Optional[str]
    error_at: Optional[str]
    error: Optional[RunDataError]
    process_id: Optional[str]
    evaluators: Optional[List[str]]
    container: Optional[str]
    dataset_id: Optional[str]
    sample: Optional[Union[DatasetDataSource, ContainerDataSource, GenerateDataSource, SessionsDataSource, TracesDataSource, ToolStepsDataSource, SimulateDataSource]]
    ground_truth: Optional[Union[DatasetDataSource, ContainerDataSource, GenerateDataSource, SessionsDataSource, TracesDataSource, ToolStepsDataSource, SimulateDataSource]]
    baseline: Optional[Union[DatasetDataSource, ContainerDataSource, GenerateDataSource, SessionsDataSource, TracesDataSource, ToolStepsDataSource, SimulateDataSource]]
    results: Optional[RunDataResults]
    metrics: Optional[Dict[str, Any]]
    config: Optional[Dict[str, Any]]
    spend: Optional[float]
    metadata: Optional[Dict[str, Any]]
    environment: str


class RunSample(TypedDict):
    object: Literal["evaluation.sample"]
    launch_index: int
    evaluator_id: str
    position: int
    item_id: Optional[str]
    #: scored, error or missing
    status: str
    missing_reason: Optional[str]
    score: Optional[float]
    passed: Optional[bool]
    reasoning: Optional[str]
    error: Optional[Dict[str, Any]]
    logs: Optional[str]
    input: Any
    output: Any
    expected: Any
    baseline: Any
    usage: Optional[Dict[str, Any]]
    cost: float
    latency_ms: Optional[float]
    extra: Optional[Dict[str, Any]]
    prompt_hash: Optional[str]
    created_at: str


class RunComparisonDataSummary(TypedDict):
    comparisons: int
    matched: int
    wins: int
    ties: int
    losses: int
    mean_difference: Optional[float]
    pass_rate_change: Optional[float]
    better: int
    worse: int
    inconclusive: int
    #: Comparisons (evaluator × launch) whose 95% interval lies above 0 (= better)
    comparisons_better: int
    #: Comparisons whose 95% interval lies below 0 (= worse)
    comparisons_worse: int
    #: Matched positions scored higher than in the baseline (= wins)
    positions_better: int
    #: Matched positions scored lower than in the baseline (= losses)
    positions_worse: int


class RunComparisonDataComparisonsItemEvaluator(TypedDict):
    id: str
    name: str


class _RunComparisonDataComparisonsItemLaunchRequired(TypedDict):
    index: int
    model: Optional[str]


class RunComparisonDataComparisonsItemLaunch(_RunComparisonDataComparisonsItemLaunchRequired, total=False):
    prompt: GenerateDataSourcePromptsItem


class RunComparisonDataComparisonsItemUnmatched(TypedDict):
    #: Positions of the run without a scored counterpart
    run: int
    #: Positions of the baseline without a scored counterpart
    baseline: int


class RunComparisonDataComparisonsItemConfidenceInterval(TypedDict):
    level: float
    lower: float
    upper: float


class RunComparisonDataComparisonsItemPassRate(TypedDict):
    #: Matched positions with a verdict on both sides
    positions: int
    run: Optional[float]
    baseline: Optional[float]
    change: Optional[float]


class RunComparisonDataComparisonsItemRegressionsItemRun(TypedDict):
    position: int
    output: Any
    score: float
    reasoning: Optional[str]


class RunComparisonDataComparisonsItemRegressionsItem(TypedDict):
    item_id: Optional[str]
    input: Any
    expected: Any
    #: Run score minus baseline score (negative)
    difference: float
    run: RunComparisonDataComparisonsItemRegressionsItemRun
    baseline: RunComparisonDataComparisonsItemRegressionsItemRun


class RunComparisonDataComparisonsItem(TypedDict):
    evaluator: RunComparisonDataComparisonsItemEvaluator
    launch: RunComparisonDataComparisonsItemLaunch
    baseline_launch: RunComparisonDataComparisonsItemLaunch
    #: item_id when the two sides share item ids, position otherwise
    matched_by: Literal["item_id", "position"]
    #: Positions scored in both runs
    matched: int
    unmatched: RunComparisonDataComparisonsItemUnmatched
    mean_difference: Optional[float]
    stdev: Optional[float]
    confidence_interval: Optional[RunComparisonDataComparisonsItemConfidenceInterval]
    #: better / worse when the interval lies above / below 0
    verdict: Literal["better", "worse", "inconclusive"]
    wins: int
    ties: int
    losses: int
    pass_rate: RunComparisonDataComparisonsItemPassRate
    #: Largest score drops first
    regressions: List[RunComparisonDataComparisonsItemRegressionsItem]


class RunComparisonDataUnmatchedEvaluators(TypedDict):
    run: List[RunComparisonDataComparisonsItemEvaluator]
    baseline: List[RunComparisonDataComparisonsItemEvaluator]


class RunComparisonDataUnmatchedLaunches(TypedDict):
    run: List[RunComparisonDataComparisonsItemLaunch]
    baseline: List[RunComparisonDataComparisonsItemLaunch]


class RunComparisonData(TypedDict):
    object: Literal["evaluation.run_comparison"]
    run_id: str
    baseline_id: str
    #: run: two runs; prompt_version or model: launches of one run (baseline_id = run_id)
    by: Literal["run", "prompt_version", "model"]
    run_status: str
    baseline_status: str
    #: True when either run is not completed
    partial: bool
    summary: RunComparisonDataSummary
    comparisons: List[RunComparisonDataComparisonsItem]
    unmatched_evaluators: RunComparisonDataUnmatchedEvaluators
    unmatched_launches: RunComparisonDataUnmatchedLaunches


class MonitorFilterGuards(TypedDict, total=False):
    """Only calls with a recorded guard verdict of one of these kinds, by one of these checks (the same verdict satisfies both). A call stopped by a guard is scored on its input, with the block as its output"""

    #: Verdicts: passed, blocked, flagged, redacted, error (default: any)
    verdicts: List[Literal["passed", "blocked", "flagged", "redacted", "error"]]
    #: Guard checks, by the check's name (default: any)
    names: List[str]


class MonitorFilter(TypedDict, total=False):
    #: Only calls to these models (as recorded: the slug the caller asked for)
    models: List[str]
    #: Only calls through these gateway routes (the task log's metadata.route): chat (/v1/chat/completions), responses (/v1/responses), messages (/v1/messages), embeddings (/v1/embeddings), gemini (/v1beta/models/*)
    routes: List[Literal["chat", "responses", "messages", "embeddings", "gemini"]]
    #: Only calls whose metadata has every one of these key/values
    metadata: Dict[str, Union[str, float, bool]]
    #: Only calls with a recorded guard verdict of one of these kinds, by one of these checks (the same verdict satisfies both). A call stopped by a guard is scored on its input, with the block as its output
    guards: MonitorFilterGuards


class _MonitorAlertRequired(TypedDict):
    #: One of the monitor's evaluators
    evaluator: str
    metric: Literal["pass_rate", "avg_score"]
    #: Fires when the metric over the window is below this
    below: float
    #: Seconds
    window: int
    #: http(s) URL receiving the POSTs
    webhook_url: str


class MonitorAlert(_MonitorAlertRequired, total=False):
    min_samples: int


class _MonitorRequired(TypedDict):
    object: Literal["monitor"]
    id: str
    name: str
    #: Container id
    container: str
    #: Evaluator ids
    evaluators: List[str]
    sampling_rate: float
    #: call or session
    unit: Literal["call", "session"]
    idle_seconds: Optional[int]
    filter: MonitorFilter
    enabled: bool
    environment: str
    alert: Optional[MonitorAlert]
    alert_state: Optional[Literal["firing", "resolved"]]
    #: The monitor's long-lived run
    run_id: str
    #: Calls (or sessions) selected so far
    selected: int
    #: USD spent on judge calls
    spend: float
    #: Age of the oldest selected call not scored yet (0: none)
    lag_seconds: float
    created_at: str
    updated_at: str


class Monitor(_MonitorRequired, total=False):
    alert_secret: str


class MonitorDeleted(TypedDict):
    object: Literal["monitor"]
    id: str
    deleted: Literal[True]


class MonitorResultsDataTotalsItem(TypedDict):
    #: Evaluator id
    evaluator: str
    name: str
    num_scored: int
    num_passed: int
    num_failed: int
    num_errors: int
    avg_score: Optional[float]
    stdev: Optional[float]
    stderr: Optional[float]


class MonitorResultsDataBucketsItem(TypedDict):
    start: str
    evaluators: List[MonitorResultsDataTotalsItem]


class MonitorResultsData(TypedDict):
    object: Literal["monitor.results"]
    monitor: str
    bucket: Literal["minute", "hour", "day"]
    totals: List[MonitorResultsDataTotalsItem]
    buckets: List[MonitorResultsDataBucketsItem]


class MonitorSampleError(TypedDict):
    code: str
    message: str


class MonitorSample(TypedDict):
    object: Literal["monitor.sample"]
    task_log_id: str
    evaluator: str
    status: Literal["scored", "error", "missing"]
    score: Optional[float]
    passed: Optional[bool]
    reasoning: Optional[str]
    error: Optional[MonitorSampleError]
    input: Any
    output: Any
    log_created_at: str
    scored_at: str


class SessionUsage(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class Session(TypedDict):
    object: Literal["session"]
    id: str
    project_id: str
    container_id: str
    #: The rule that started the session (see docs/agents.md)
    assigned_by: Union[Literal["header"], Literal["conversation"], Literal["trace"], Literal["continuity"]]
    key: Optional[str]
    started_at: str
    last_activity_at: str
    ended_at: Optional[str]
    #: Calls in the session
    turn_count: int
    error_count: int
    models: List[str]
    usage: SessionUsage
    #: USD
    cost: float
    #: Sum of the calls’ latencies
    latency_ms: float


class SessionDetailScoresItem(TypedDict):
    run_id: str
    evaluator_id: str
    score: Optional[float]
    passed: Optional[bool]


class SessionDetailTurnsItemInputItemToolCallsItem(TypedDict):
    """A tool call of an earlier answer"""

    id: str
    name: str
    arguments: Any


class _SessionDetailTurnsItemInputItemRequired(TypedDict):
    role: Union[Literal["system"], Literal["user"], Literal["assistant"], Literal["tool"]]
    content: str


class SessionDetailTurnsItemInputItem(_SessionDetailTurnsItemInputItemRequired, total=False):
    tool_call_id: str
    #: An assistant message's tool calls, in a turn showing a conversation the session did not record (its first)
    tool_calls: List[SessionDetailTurnsItemInputItemToolCallsItem]


class SessionDetailTurnsItemOutputToolCallsItem(TypedDict):
    id: str
    name: str
    arguments: Any


class SessionDetailTurnsItemOutput(TypedDict):
    content: Optional[str]
    tool_calls: List[SessionDetailTurnsItemOutputToolCallsItem]


SessionDetailTurnsItemHandoff = TypedDict("SessionDetailTurnsItemHandoff", {"from": Optional[str], "to": Optional[str], "tool": Optional[str], "tool_call_id": Optional[str]})


class SessionDetailTurnsItem(TypedDict):
    index: int
    task_log_id: str
    model: str
    created_at: str
    status: Union[Literal["success"], Literal["error"]]
    #: What the call added to the conversation
    input: List[SessionDetailTurnsItemInputItem]
    output: SessionDetailTurnsItemOutput
    handoff: Optional[SessionDetailTurnsItemHandoff]
    usage: Optional[Dict[str, Any]]
    cost: float
    latency_ms: float
    error: Any
    #: Scores of runs over this call
    scores: List[SessionDetailScoresItem]


class SessionDetailToolCallsItem(TypedDict):
    id: str
    name: str
    arguments: Any
    result: Optional[str]
    turn: int
    #: Scores of tool-step runs over this call (its item id: `<session id>#<tool call id>`)
    scores: List[SessionDetailScoresItem]


class SessionDetail(TypedDict):
    object: Literal["session"]
    id: str
    project_id: str
    container_id: str
    #: The rule that started the session (see docs/agents.md)
    assigned_by: Union[Literal["header"], Literal["conversation"], Literal["trace"], Literal["continuity"]]
    key: Optional[str]
    started_at: str
    last_activity_at: str
    ended_at: Optional[str]
    #: Calls in the session
    turn_count: int
    error_count: int
    models: List[str]
    usage: SessionUsage
    #: USD
    cost: float
    #: Sum of the calls’ latencies
    latency_ms: float
    #: Scores of session runs over this session
    scores: List[SessionDetailScoresItem]
    #: Index of the first turn returned (turn_count says how many there are in all)
    turns_offset: int
    turns: List[SessionDetailTurnsItem]
    tool_calls: List[SessionDetailToolCallsItem]


class ToolStep(TypedDict):
    object: Literal["tool_step"]
    #: The step as an item: `<session id>#<tool call id>`
    id: str
    session_id: str
    tool_call_id: str
    #: The tool's name
    name: str
    #: The arguments as the model gave them (parsed where JSON)
    arguments: Any
    result: Optional[str]
    #: The turn whose answer made the call
    turn: int
    #: That turn's task log
    task_log_id: str
    #: The step's place among the session's tool calls
    index: int
    #: The conversation before the call
    context: List[SessionDetailTurnsItemInputItem]
    #: Scores of tool-step runs over this step
    scores: List[SessionDetailScoresItem]


class AnnotationQueueRubricEvaluatorsItem(TypedDict):
    id: str
    name: str
    #: The evaluator's scale
    scale: Dict[str, Any]


class AnnotationQueueRubric(TypedDict):
    evaluators: List[AnnotationQueueRubricEvaluatorsItem]
    comment: bool


class AnnotationQueueCounts(TypedDict):
    total: int
    open: int
    done: int
    flagged: int
    #: Current human reviews (corrections not counted twice)
    reviews: int


class AnnotationQueue(TypedDict):
    object: Literal["annotation_queue"]
    id: str
    project_id: str
    name: str
    description: Optional[str]
    rubric: AnnotationQueueRubric
    reviewers_per_item: int
    claim_seconds: int
    counts: AnnotationQueueCounts
    created_at: str
    updated_at: str


class AnnotationQueueDeleted(TypedDict):
    object: Literal["annotation_queue"]
    id: str
    deleted: Literal[True]


class AnnotationItemsAdded(TypedDict):
    object: Literal["annotation_items.added"]
    added: int
    already_queued: int


class AnnotationItem(TypedDict):
    object: Literal["annotation_item"]
    id: str
    queue_id: str
    #: task_log, session, tool_step or run_sample
    kind: str
    #: What the item is: a task log or session id, `<session>#<tool call id>`, `<run>/<launch>/<position>`
    ref: str
    run_id: Optional[str]
    launch_index: Optional[int]
    position: Optional[int]
    source: str
    state: str
    reviewers_needed: int
    reviews: int
    flag: Optional[str]
    created_at: str
    updated_at: str


class AnnotationItemViewContent(TypedDict):
    input: Any
    output: Any
    expected: Any
    metadata: Any
    error: Optional[MonitorSampleError]


class AnnotationItemViewJudgeItem(TypedDict):
    evaluator_id: str
    #: The evaluator's name
    evaluator: str
    #: scored, error or missing: an error is never a pass
    status: str
    error: Optional[MonitorSampleError]
    score: Optional[float]
    passed: Optional[bool]
    reasoning: Optional[str]
    label: Optional[str]
    prompt_hash: Optional[str]


class AnnotationItemViewClaim(TypedDict):
    reviewer: str
    expires_at: str


class AnnotationItemView(TypedDict):
    object: Literal["annotation_item.view"]
    item: AnnotationItem
    content: AnnotationItemViewContent
    judge: Optional[List[AnnotationItemViewJudgeItem]]
    claim: Optional[AnnotationItemViewClaim]


class AnnotationClaim(TypedDict):
    object: Literal["annotation_claim"]
    item: Optional[AnnotationItemView]
    #: Open items this reviewer may still claim
    remaining: int


class AnnotationItemReviewedReviewsItem(TypedDict):
    object: Literal["annotation_review"]
    id: str
    queue_id: str
    item_id: str
    evaluator_id: str
    reviewer: str
    score: Optional[float]
    passed: Optional[bool]
    label: Optional[str]
    comment: Optional[str]
    superseded_by: Optional[str]
    created_at: str


class AnnotationItemReviewed(TypedDict):
    object: Literal["annotation_item"]
    id: str
    state: str
    reviews: List[AnnotationItemReviewedReviewsItem]


class AnnotationItemState(TypedDict):
    object: Literal["annotation_item"]
    id: str
    state: str


AnnotationItemFlagged = AnnotationItemState


AnnotationReview = AnnotationItemReviewedReviewsItem


AnnotationReviewCorrected = AnnotationItemReviewedReviewsItem


ExportedDataset = Dataset


class PromptSummary(TypedDict):
    object: Literal["prompt"]
    id: str
    project_id: str
    name: str
    description: Optional[str]
    latest_version: int
    #: Label → version (latest included)
    labels: Dict[str, int]
    created_at: str
    updated_at: str


class _PromptVersionMessagesItemRequired(TypedDict):
    role: Union[Literal["system"], Literal["developer"], Literal["user"], Literal["assistant"]]
    #: Text with {{variables}}
    content: str


class PromptVersionMessagesItem(_PromptVersionMessagesItemRequired, total=False):
    name: str


class _PromptVersionToolsItemFunctionRequired(TypedDict):
    name: str


class PromptVersionToolsItemFunction(_PromptVersionToolsItemFunctionRequired, total=False):
    description: str
    parameters: Dict[str, Any]
    strict: Optional[bool]


class PromptVersionToolsItem(TypedDict):
    """A function tool, as chat completions declare it"""

    type: Literal["function"]
    function: PromptVersionToolsItemFunction


class PromptVersion(TypedDict):
    object: Literal["prompt.version"]
    prompt_id: str
    #: The prompt's name
    name: str
    version: int
    messages: List[PromptVersionMessagesItem]
    #: Declared variable types; a variable the messages use and this omits is a string
    variables: Dict[str, Union[Literal["string"], Literal["number"], Literal["boolean"], Literal["json"]]]
    model: Optional[str]
    parameters: Dict[str, Any]
    tools: Optional[List[PromptVersionToolsItem]]
    response_format: Optional[Dict[str, Any]]
    commit_message: Optional[str]
    #: key:<id> or user:<id>
    author: str
    created_at: str
    #: Labels on this version (latest included)
    labels: List[str]


class Prompt(TypedDict):
    object: Literal["prompt"]
    id: str
    project_id: str
    name: str
    description: Optional[str]
    latest_version: int
    #: Label → version (latest included)
    labels: Dict[str, int]
    created_at: str
    updated_at: str
    version: PromptVersion


class PromptDiffMessagesItemRole(TypedDict):
    old: Any
    new: Any


class _PromptDiffMessagesItemRequired(TypedDict):
    index: int
    status: Union[Literal["added"], Literal["removed"], Literal["changed"], Literal["unchanged"]]


class PromptDiffMessagesItem(_PromptDiffMessagesItemRequired, total=False):
    role: PromptDiffMessagesItemRole
    #: Unified diff of the content
    patch: str


class PromptDiff(TypedDict):
    object: Literal["prompt.diff"]
    prompt_id: str
    from_version: int
    to_version: int
    #: Whether anything differs
    changed: bool
    messages: List[PromptDiffMessagesItem]
    model: Optional[PromptDiffMessagesItemRole]
    parameters: Dict[str, PromptDiffMessagesItemRole]
    variables: Dict[str, PromptDiffMessagesItemRole]
    tools: Optional[PromptDiffMessagesItemRole]
    response_format: Optional[PromptDiffMessagesItemRole]


class PromptLabelHistoryHistoryItem(TypedDict):
    #: move, rollback or delete
    action: str
    from_version: Optional[int]
    to_version: Optional[int]
    #: Undone by a rollback
    reverted: bool
    moved_by: str
    moved_at: str


class PromptLabelHistory(TypedDict):
    name: str
    version: int
    history: List[PromptLabelHistoryHistoryItem]


class PromptLabel(TypedDict):
    object: Literal["prompt.label"]
    prompt_id: str
    name: str
    version: int
    previous_version: Optional[int]
    updated_by: str
    updated_at: str


class PromptLabelDeleted(TypedDict):
    object: Literal["prompt.label"]
    prompt_id: str
    name: str
    deleted: Literal[True]


class AnnotationSettlement(TypedDict):
    object: Literal["annotation_settlement"]
    id: str
    queue_id: str
    item_id: str
    evaluator_id: str
    evaluator: str
    score: Optional[float]
    passed: Optional[bool]
    label: Optional[str]
    #: majority, review or value
    method: str
    review_id: Optional[str]
    comment: Optional[str]
    #: The reviewer id of whoever settled it
    settled_by: str
    created_at: str


class AnnotationQueueSettled(TypedDict):
    object: Literal["annotation_queue.settled"]
    queue_id: str
    evaluator_id: str
    #: Disagreements settled now
    settled: int
    #: Disagreements left open: no majority
    ties: int


class QueueAgreementEvaluatorsItemEvaluator(TypedDict):
    id: str
    name: str
    scale: Dict[str, Any]


class QueueAgreementEvaluatorsItemGroupsItemConfusion(TypedDict):
    labels: List[Union[str, float]]
    #: Rows: the judge; columns: the person
    matrix: List[List[int]]


class QueueAgreementEvaluatorsItemGroupsItemIntervals(TypedDict):
    """95 % percentile bootstrap intervals (seeded)"""

    percent_agreement: Optional[List[float]]
    kappa: Optional[List[float]]
    weighted_kappa: Optional[List[float]]
    pearson: Optional[List[float]]
    spearman: Optional[List[float]]
    mae: Optional[List[float]]


class QueueAgreementEvaluatorsItemGroupsItemDisagreementsItem(TypedDict):
    item_id: str
    judge: Any
    human: Any


class QueueAgreementEvaluatorsItemGroupsItem(TypedDict):
    prompt_hash: Optional[str]
    #: Pairs
    n: int
    percent_agreement: Optional[float]
    kappa: Optional[float]
    weighted_kappa: Optional[float]
    pearson: Optional[float]
    spearman: Optional[float]
    mae: Optional[float]
    confusion: Optional[QueueAgreementEvaluatorsItemGroupsItemConfusion]
    #: 95 % percentile bootstrap intervals (seeded)
    intervals: QueueAgreementEvaluatorsItemGroupsItemIntervals
    #: The first pairs that disagree (at most 20)
    disagreements: List[QueueAgreementEvaluatorsItemGroupsItemDisagreementsItem]


class QueueAgreementEvaluatorsItemInterAnnotatorIntervals(TypedDict):
    """95 % bootstrap intervals, resampling items (seeded)"""

    percent_agreement: Optional[List[float]]
    kappa: Optional[List[float]]
    weighted_kappa: Optional[List[float]]
    fleiss_kappa: Optional[List[float]]
    krippendorff_alpha: Optional[List[float]]


class QueueAgreementEvaluatorsItemInterAnnotator(TypedDict):
    #: Items with two reviewers or more
    n: int
    percent_agreement: Optional[float]
    kappa: Optional[float]
    weighted_kappa: Optional[float]
    #: The most reviewers of one item
    reviewers: int
    fleiss_kappa: Optional[float]
    krippendorff_alpha: Optional[float]
    #: α's level of measurement: nominal (pass/fail, labels), ordinal (grades), interval (scores)
    alpha_level: Union[Literal["nominal"], Literal["ordinal"], Literal["interval"]]
    #: 95 % bootstrap intervals, resampling items (seeded)
    intervals: QueueAgreementEvaluatorsItemInterAnnotatorIntervals


class QueueAgreementEvaluatorsItemBootstrap(TypedDict):
    seed: int
    resamples: int


class QueueAgreementEvaluatorsItemCompare(TypedDict):
    evaluator: QueueAgreementEvaluatorsItemEvaluator
    #: Judge–human pairs in all
    n: int
    #: One per judge prompt (hash): a changed prompt is never averaged in
    groups: List[QueueAgreementEvaluatorsItemGroupsItem]
    inter_annotator: Optional[QueueAgreementEvaluatorsItemInterAnnotator]


class _QueueAgreementEvaluatorsItemRequired(TypedDict):
    object: Literal["evaluator.agreement"]
    evaluator: QueueAgreementEvaluatorsItemEvaluator
    #: Judge–human pairs in all
    n: int
    #: One per judge prompt (hash): a changed prompt is never averaged in
    groups: List[QueueAgreementEvaluatorsItemGroupsItem]
    inter_annotator: Optional[QueueAgreementEvaluatorsItemInterAnnotator]
    queue_id: Optional[str]
    run_id: Optional[str]
    bootstrap: QueueAgreementEvaluatorsItemBootstrap


class QueueAgreementEvaluatorsItem(_QueueAgreementEvaluatorsItemRequired, total=False):
    compare: QueueAgreementEvaluatorsItemCompare


class QueueAgreement(TypedDict):
    object: Literal["annotation_queue.agreement"]
    queue_id: str
    evaluators: List[QueueAgreementEvaluatorsItem]


EvaluatorAgreement = QueueAgreementEvaluatorsItem


class EvaluatorTemplate(TypedDict):
    object: Literal["evaluator_template"]
    #: `name@version`, as `template` takes it
    id: str
    name: str
    version: int
    title: str
    description: str
    #: pass_fail, ordinal {min, max} (integers), continuous {min, max} or labels {labels}
    scale: Union[JudgeEvaluatorScaleVariant1, JudgeEvaluatorScaleVariant2, JudgeEvaluatorScaleVariant3, JudgeEvaluatorScaleVariant4]
    pass_threshold: Optional[float]
    #: The prompt variables ({{input}}, {{metadata.context}}, …)
    variables: List[str]
    prompt: str


EvaluatorTemplateOne = EvaluatorTemplate


class TraceSummaryTotalsUsage(TypedDict):
    input_tokens: int
    output_tokens: int
    total_tokens: int


class TraceSummaryTotals(TypedDict):
    span_count: int
    #: Spans with status error
    error_count: int
    #: Spans that are model calls
    model_call_count: int
    usage: TraceSummaryTotalsUsage
    #: USD, over the model calls
    cost: float


class TraceSummary(TypedDict):
    object: Literal["trace"]
    #: The trace id, 32 lowercase hex digits
    id: str
    project_id: str
    container_id: Optional[str]
    name: Optional[str]
    service_name: Optional[str]
    session_id: Optional[str]
    #: ISO time of its earliest span
    started_at: str
    #: ISO time of its latest span end
    ended_at: str
    duration_ms: float
    #: Models of its model calls, distinct
    models: List[str]
    totals: TraceSummaryTotals


class TraceSpansItemStatus(TypedDict):
    code: Literal["unset", "ok", "error"]
    message: Optional[str]


class TraceSpansItemEventsItem(TypedDict):
    name: str
    #: ISO time
    time: str
    attributes: Dict[str, Any]


class TraceSpansItemScope(TypedDict):
    name: str
    version: Optional[str]


class TraceSpansItemModelCall(TypedDict):
    task_log_id: Optional[str]
    provider: Optional[str]
    model: Optional[str]
    request_model: Optional[str]
    response_model: Optional[str]
    usage: TraceSummaryTotalsUsage
    #: USD, priced from the model catalog
    cost: float
    #: False when the emitter recorded no messages (content capture off)
    content_captured: bool


class TraceSpansItem(TypedDict):
    object: Literal["trace.span"]
    #: 16 lowercase hex digits
    span_id: str
    parent_span_id: Optional[str]
    #: Distance from its root in the tree
    depth: int
    source: Literal["otlp", "gateway"]
    name: str
    kind: Literal["unspecified", "internal", "server", "client", "producer", "consumer"]
    operation: Optional[str]
    container_id: Optional[str]
    session_id: Optional[str]
    #: ISO time
    started_at: str
    #: ISO time
    ended_at: str
    #: Start, in ms after the start of the trace
    offset_ms: float
    duration_ms: float
    status: TraceSpansItemStatus
    #: The span attributes, OTLP values as JSON values
    attributes: Dict[str, Any]
    events: List[TraceSpansItemEventsItem]
    #: The resource attributes (service.name, …)
    resource: Dict[str, Any]
    scope: Optional[TraceSpansItemScope]
    model_call: Optional[TraceSpansItemModelCall]


class Trace(TypedDict):
    object: Literal["trace"]
    #: The trace id, 32 lowercase hex digits
    id: str
    project_id: str
    container_id: Optional[str]
    name: Optional[str]
    service_name: Optional[str]
    session_id: Optional[str]
    #: ISO time of its earliest span
    started_at: str
    #: ISO time of its latest span end
    ended_at: str
    duration_ms: float
    #: Models of its model calls, distinct
    models: List[str]
    totals: TraceSummaryTotals
    spans: List[TraceSpansItem]


class GuardPolicyAppliesTo(TypedDict):
    containers: List[str]
    keys: List[str]
    models: List[str]


class _GuardPolicyChecksItemGuardVariant1Required(TypedDict):
    type: Literal["pii"]


class GuardPolicyChecksItemGuardVariant1(_GuardPolicyChecksItemGuardVariant1Required, total=False):
    """Personal data, each kind checked (cards by Luhn, IBANs by mod 97)"""

    #: What it looks for (default: all)
    entities: List[Literal["email", "phone", "card", "iban", "national_id"]]
    #: Which national ids (default: all)
    national_ids: List[Literal["us_ssn", "uk_nino", "es_dni", "it_cf", "de_tax_id", "fr_nir", "in_aadhaar"]]


class _GuardPolicyChecksItemGuardVariant2Required(TypedDict):
    type: Literal["secrets"]


class GuardPolicyChecksItemGuardVariant2(_GuardPolicyChecksItemGuardVariant2Required, total=False):
    """API keys, tokens and private key blocks"""

    #: Which credential patterns (default: all)
    kinds: List[Literal["openai", "anthropic", "aws_access_key", "github", "slack", "private_key", "bearer"]]


class GuardPolicyChecksItemGuardVariant3(TypedDict):
    """Words or phrases, case-insensitive, matched at word bounds"""

    type: Literal["deny_list"]
    terms: List[str]


class _GuardPolicyChecksItemGuardVariant4Required(TypedDict):
    type: Literal["regex"]
    #: RE2 syntax (linear time)
    pattern: str


class GuardPolicyChecksItemGuardVariant4(_GuardPolicyChecksItemGuardVariant4Required, total=False):
    """A regular expression, run by an RE2 engine: no backtracking"""

    case_insensitive: bool
    #: Redaction text (default [REDACTED])
    replacement: str


class GuardPolicyChecksItemGuardVariant5(TypedDict):
    type: Literal["json_schema"]
    #: The JSON Schema the answer must satisfy (parsed as JSON)
    schema: Dict[str, Any]


class _GuardPolicyChecksItemGuardVariant6Required(TypedDict):
    type: Literal["prompt_injection"]


class GuardPolicyChecksItemGuardVariant6(_GuardPolicyChecksItemGuardVariant6Required, total=False):
    """Heuristic phrases of prompt injection, scored 0..1"""

    #: Triggers at or above (0.5)
    threshold: float


class _GuardPolicyChecksItemGuardVariant7Required(TypedDict):
    type: Literal["language"]
    #: ISO 639-3 codes (eng, fra, deu, …)
    allowed: List[str]


class GuardPolicyChecksItemGuardVariant7(_GuardPolicyChecksItemGuardVariant7Required, total=False):
    #: Shorter texts are not judged (20)
    min_chars: int


class _GuardPolicyChecksItemGuardVariant8Required(TypedDict):
    type: Literal["length"]


class GuardPolicyChecksItemGuardVariant8(_GuardPolicyChecksItemGuardVariant8Required, total=False):
    min_chars: int
    max_chars: int
    min_tokens: int
    #: Tokens estimated as characters / 4
    max_tokens: int


class GuardPolicyChecksItemGuardVariant9(TypedDict):
    """Any evaluator of the project; a failing verdict triggers"""

    type: Literal["evaluator"]
    #: An evaluator of the project, id or name
    evaluator: str


class GuardPolicyChecksItem(TypedDict):
    name: str
    guard: Union[GuardPolicyChecksItemGuardVariant1, GuardPolicyChecksItemGuardVariant2, GuardPolicyChecksItemGuardVariant3, GuardPolicyChecksItemGuardVariant4, GuardPolicyChecksItemGuardVariant5, GuardPolicyChecksItemGuardVariant6, GuardPolicyChecksItemGuardVariant7, GuardPolicyChecksItemGuardVariant8, GuardPolicyChecksItemGuardVariant9]
    #: input: before the upstream call; parallel: beside it (a block cancels it); output: on the answer
    stage: Union[Literal["input"], Literal["output"], Literal["parallel"]]
    action: Union[Literal["block"], Literal["flag"], Literal["redact"]]
    timeout_ms: int
    #: A check that times out or fails: open lets the call through, closed blocks it
    on_error: Union[Literal["open"], Literal["closed"]]
    #: Output checks on streams: as the text arrives (prefix-judging guards) or once it is complete
    streaming: Union[Literal["incremental"], Literal["hold"]]


class GuardPolicy(TypedDict):
    id: str
    object: Literal["guard_policy"]
    name: str
    description: Optional[str]
    enabled: bool
    applies_to: GuardPolicyAppliesTo
    checks: List[GuardPolicyChecksItem]
    created_at: str
    updated_at: str


class GuardPolicyDeleted(TypedDict):
    id: str
    object: Literal["guard_policy"]
    deleted: Literal[True]


class GuardVerdict(TypedDict):
    id: str
    object: Literal["guard_verdict"]
    task_log_id: Optional[str]
    policy_id: str
    #: The check’s name: the score’s name
    guard: str
    #: input: before the upstream call; parallel: beside it (a block cancels it); output: on the answer
    stage: Union[Literal["input"], Literal["output"], Literal["parallel"]]
    action: Union[Literal["block"], Literal["flag"], Literal["redact"]]
    #: passed; blocked (also a check that failed closed); flagged; redacted; error (failed open)
    verdict: Union[Literal["passed"], Literal["blocked"], Literal["flagged"], Literal["redacted"], Literal["error"]]
    score: Optional[float]
    passed: Optional[bool]
    reason: Optional[str]
    error: Optional[MonitorSampleError]
    latency_ms: float
    created_at: str


class GuardVerdictSummaryGuardsItemExamplesItem(TypedDict):
    id: str
    object: Literal["guard_verdict"]
    task_log_id: Optional[str]
    policy_id: str
    #: The check’s name: the score’s name
    guard: str
    #: input: before the upstream call; parallel: beside it (a block cancels it); output: on the answer
    stage: Union[Literal["input"], Literal["output"], Literal["parallel"]]
    action: Union[Literal["block"], Literal["flag"], Literal["redact"]]
    #: passed; blocked (also a check that failed closed); flagged; redacted; error (failed open)
    verdict: Union[Literal["passed"], Literal["blocked"], Literal["flagged"], Literal["redacted"], Literal["error"]]
    score: Optional[float]
    passed: Optional[bool]
    reason: Optional[str]
    error: Optional[MonitorSampleError]
    latency_ms: float
    created_at: str
    model: Optional[str]


class GuardVerdictSummaryGuardsItem(TypedDict):
    #: The check’s name
    guard: str
    blocked: int
    flagged: int
    redacted: int
    error: int
    total: int
    #: The latest verdicts of the check, newest first
    examples: List[GuardVerdictSummaryGuardsItemExamplesItem]


class GuardVerdictSummary(TypedDict):
    object: Literal["guard_verdict_summary"]
    since: str
    until: str
    #: Per check name, most verdicts first (at most 100 checks); passes are not stored
    guards: List[GuardVerdictSummaryGuardsItem]


class PlaygroundRequestSource(TypedDict):
    kind: Union[Literal["prompt_version"], Literal["task_log"], Literal["span"], Literal["session_turn"]]
    id: str
    task_log_id: Optional[str]


class PlaygroundRequestPrompt(TypedDict):
    #: The prompt the request was opened from
    id: str
    version: int


class PlaygroundRequest(TypedDict):
    object: Literal["playground.request"]
    source: PlaygroundRequestSource
    messages: List[PromptVersionMessagesItem]
    #: Values of the variables (a recorded call has none: its messages are rendered)
    variables: Dict[str, Any]
    variable_types: Dict[str, Any]
    tools: Optional[List[Dict[str, Any]]]
    response_format: Optional[Dict[str, Any]]
    parameters: Dict[str, Any]
    model: Optional[str]
    output: Optional[str]
    prompt: Optional[PlaygroundRequestPrompt]
    prompt_name: Optional[str]


PlaygroundSavedVersion = PromptVersion


class _CreateApiKeyRequired(TypedDict):
    name: str


class CreateApiKey(_CreateApiKeyRequired, total=False):
    #: <resource>:<action> strings; default: the creating key's own permissions
    permissions: List[str]
    cache_ttl_seconds: Optional[int]
    budget: Optional[Budget]


class UpdateApiKey(TypedDict, total=False):
    name: str
    budget: Optional[Budget]


class _CreateContainerRequired(TypedDict):
    #: Unique in the project; letters, digits, . _ : -, up to 128 characters, not starting with ctr_
    label: str


class CreateContainer(_CreateContainerRequired, total=False):
    description: Optional[str]
    metadata: Optional[Dict[str, Any]]
    #: Whether calls without a session header, conversation or trace join sessions by conversation continuity (default true)
    session_continuity: bool


class PatchContainer(TypedDict, total=False):
    #: Unique in the project; letters, digits, . _ : -, up to 128 characters, not starting with ctr_
    label: str
    description: Optional[str]
    metadata: Optional[Dict[str, Any]]
    #: Whether calls without a session header, conversation or trace join sessions by conversation continuity (default true)
    session_continuity: bool


class _ImportLogRequired(TypedDict):
    model: str


class ImportLog(_ImportLogRequired, total=False):
    #: Request messages; default: request.messages
    input: Any
    output: Optional[str]
    request: Any
    response: Any
    usage: Optional[TaskLogUsage]
    latency_ms: float
    cost: float
    status: Union[Literal["success"], Literal["error"]]
    error: Optional[TaskLogError]
    #: Free-form; `expected` here is the ground truth of evaluations
    metadata: Dict[str, Any]
    created_at: str


class _CreateDatasetRequired(TypedDict):
    #: Unique in the project; letters, digits, . _ : -, up to 128 characters, not starting with ds_
    label: str
    #: The rows, in order
    items: List[Dict[str, Any]]


class CreateDataset(_CreateDatasetRequired, total=False):
    description: Optional[str]
    metadata: Optional[Dict[str, Any]]


class PatchDataset(TypedDict, total=False):
    #: Unique in the project; letters, digits, . _ : -, up to 128 characters, not starting with ds_
    label: str
    description: Optional[str]
    metadata: Optional[Dict[str, Any]]


class NewDatasetItemFromVariant1(TypedDict):
    task_log_id: str


class _NewDatasetItemFromVariant2Required(TypedDict):
    span_id: str


class NewDatasetItemFromVariant2(_NewDatasetItemFromVariant2Required, total=False):
    trace_id: str


class NewDatasetItemFromVariant3(TypedDict):
    session_id: str


class NewDatasetItemFromVariant4(TypedDict):
    review_id: str


NewDatasetItem = TypedDict("NewDatasetItem", {"id": str, "input": Any, "output": Any, "expected": Any, "metadata": Dict[str, Any], "splits": List[str], "data": Dict[str, Any], "from": Union[NewDatasetItemFromVariant1, NewDatasetItemFromVariant2, NewDatasetItemFromVariant3, NewDatasetItemFromVariant4]}, total=False)


class NewDatasetItems(TypedDict):
    items: List[NewDatasetItem]


class PatchDatasetItem(TypedDict, total=False):
    #: The input (any JSON)
    input: Any
    #: An output (any JSON)
    output: Any
    #: The expected answer (any JSON)
    expected: Any
    metadata: Dict[str, Any]
    #: The named subsets the item is in (a run side may read one split)
    splits: List[str]
    #: Other fields of the row to set (merged into it)
    data: Dict[str, Any]


class RegisterModelDefaultParameters(TypedDict, total=False):
    """temperature, max_tokens, top_p, seed, system, stop, …"""

    temperature: float
    top_p: float
    max_tokens: int
    seed: int
    #: System prompt added before the messages
    system: str
    stop: Union[str, List[str]]


class _RegisterModelRequired(TypedDict):
    #: Unique in the project and usable wherever a model slug is; letters, digits, . _ : -, up to 128 characters, not starting with mdl_
    label: str
    #: http(s) URL of the API root, e.g. http://10.0.0.5:8000/v1
    base_url: str


class RegisterModel(_RegisterModelRequired, total=False):
    #: Wire API of the upstream: an OpenAI-compatible server (vLLM, Ollama, …), Anthropic Messages, or Google's Gemini API (generateContent; base_url names the API version, e.g. https://generativelanguage.googleapis.com/v1beta)
    provider: Union[Literal["openai-compatible"], Literal["anthropic"], Literal["gemini"]]
    #: Model name sent upstream; default: label
    upstream_model: str
    api_key: Optional[str]
    input_price_per_mtok: Optional[float]
    output_price_per_mtok: Optional[float]
    context_window: Optional[int]
    default_parameters: Optional[RegisterModelDefaultParameters]
    fallbacks: Optional[List[str]]
    requests_per_minute: Optional[int]
    tokens_per_minute: Optional[int]
    cache_ttl_seconds: Optional[int]
    #: What the upstream speaks for generation: chat (completions, the default) or responses (Responses-API calls go to it natively). Anthropic models speak Messages and Gemini models generateContent whatever this says.
    api: Union[Literal["chat"], Literal["responses"]]
    metadata: Optional[Dict[str, Any]]


class PatchModel(TypedDict, total=False):
    #: Unique in the project and usable wherever a model slug is; letters, digits, . _ : -, up to 128 characters, not starting with mdl_
    label: str
    #: Wire API of the upstream: an OpenAI-compatible server (vLLM, Ollama, …), Anthropic Messages, or Google's Gemini API (generateContent; base_url names the API version, e.g. https://generativelanguage.googleapis.com/v1beta)
    provider: Union[Literal["openai-compatible"], Literal["anthropic"], Literal["gemini"]]
    base_url: str
    upstream_model: str
    api_key: Optional[str]
    input_price_per_mtok: Optional[float]
    output_price_per_mtok: Optional[float]
    context_window: Optional[int]
    default_parameters: Optional[RegisterModelDefaultParameters]
    fallbacks: Optional[List[str]]
    requests_per_minute: Optional[int]
    tokens_per_minute: Optional[int]
    cache_ttl_seconds: Optional[int]
    #: What the upstream speaks for generation: chat (completions, the default) or responses (Responses-API calls go to it natively). Anthropic models speak Messages and Gemini models generateContent whatever this says.
    api: Union[Literal["chat"], Literal["responses"]]
    metadata: Optional[Dict[str, Any]]


class _CreateEvaluatorRequired(TypedDict):
    #: judge, code, a grader type (string_check, text_similarity, score_model, label_model) or a trajectory grader (tool_call_match, trajectory_length)
    type: Literal["judge", "code", "string_check", "text_similarity", "score_model", "label_model", "tool_call_match", "trajectory_length"]


class CreateEvaluator(_CreateEvaluatorRequired, total=False):
    #: pointwise (default) or pairwise
    mode: Literal["pointwise", "pairwise"]
    #: A judge catalog template (`faithfulness@1`, or a name for its latest version): fills prompt, scale and pass_threshold unless given
    template: str
    container: Optional[str]
    model: Optional[str]
    prompt: Optional[str]
    source: Optional[str]
    requirements: Optional[List[str]]
    pass_threshold: Optional[float]
    scale: Optional[Union[JudgeEvaluatorScaleVariant1, JudgeEvaluatorScaleVariant2, JudgeEvaluatorScaleVariant3, JudgeEvaluatorScaleVariant4]]
    name: Optional[str]
    description: Optional[str]
    api: Optional[Literal["chat_completions", "messages"]]
    metadata: Dict[str, Any]
    #: Passed on every judge call (temperature, max_tokens, seed, …)
    inference_parameters: Dict[str, Any]
    #: string_check / text_similarity: the text template; score_model / label_model: the messages
    input: Union[str, List[GraderEvaluatorInputItem]]
    #: The reference text template
    reference: str
    #: string_check: eq, ne, like, ilike
    operation: Literal["eq", "ne", "like", "ilike"]
    #: text_similarity metric
    evaluation_metric: Literal["cosine", "fuzzy_match", "bleu", "gleu", "meteor", "rouge_1", "rouge_2", "rouge_3", "rouge_4", "rouge_5", "rouge_l"]
    #: text_similarity cosine: the embeddings model
    embedding_model: str
    #: score_model [min, max]
    range: List[float]
    sampling_params: GraderEvaluatorSamplingParams
    labels: List[str]
    passing_labels: List[str]
    #: tool_call_match: exact, in_order (default), any_order, subset or superset
    match_mode: Literal["exact", "in_order", "any_order", "subset", "superset"]
    #: tool_call_match: how arguments compare: exact (default), subset, schema or ignore
    arguments_match: Literal["exact", "subset", "schema", "ignore"]
    #: tool_call_match: the field (or dotted path) of the ground-truth row, else of the sample row, that lists the expected calls; default expected_tool_calls
    expected_field: str
    tool_schemas: Optional[Dict[str, Any]]
    #: trajectory_length: what is counted (default tool_calls)
    length_of: Literal["turns", "tool_calls"]
    min_length: Optional[int]
    max_length: Optional[int]


class PatchEvaluator(TypedDict, total=False):
    mode: Optional[Literal["pointwise", "pairwise"]]
    container: Optional[str]
    model: Optional[str]
    prompt: Optional[str]
    source: Optional[str]
    requirements: Optional[List[str]]
    pass_threshold: Optional[float]
    scale: Optional[Union[JudgeEvaluatorScaleVariant1, JudgeEvaluatorScaleVariant2, JudgeEvaluatorScaleVariant3, JudgeEvaluatorScaleVariant4]]
    name: Optional[str]
    description: Optional[str]
    api: Optional[Literal["chat_completions", "messages"]]
    metadata: Dict[str, Any]
    #: Passed on every judge call (temperature, max_tokens, seed, …)
    inference_parameters: Dict[str, Any]
    #: string_check / text_similarity: the text template; score_model / label_model: the messages
    input: Union[str, List[GraderEvaluatorInputItem]]
    #: The reference text template
    reference: str
    #: string_check: eq, ne, like, ilike
    operation: Literal["eq", "ne", "like", "ilike"]
    #: text_similarity metric
    evaluation_metric: Literal["cosine", "fuzzy_match", "bleu", "gleu", "meteor", "rouge_1", "rouge_2", "rouge_3", "rouge_4", "rouge_5", "rouge_l"]
    #: text_similarity cosine: the embeddings model
    embedding_model: str
    #: score_model [min, max]
    range: List[float]
    sampling_params: GraderEvaluatorSamplingParams
    labels: List[str]
    passing_labels: List[str]
    #: tool_call_match: exact, in_order (default), any_order, subset or superset
    match_mode: Literal["exact", "in_order", "any_order", "subset", "superset"]
    #: tool_call_match: how arguments compare: exact (default), subset, schema or ignore
    arguments_match: Literal["exact", "subset", "schema", "ignore"]
    #: tool_call_match: the field (or dotted path) of the ground-truth row, else of the sample row, that lists the expected calls; default expected_tool_calls
    expected_field: str
    tool_schemas: Optional[Dict[str, Any]]
    #: trajectory_length: what is counted (default tool_calls)
    length_of: Literal["turns", "tool_calls"]
    min_length: Optional[int]
    max_length: Optional[int]


class _CreateRunDatasetDataSourceRequired(TypedDict):
    type: Literal["dataset"]
    #: type=dataset: dataset id or label
    dataset: str


class CreateRunDatasetDataSource(_CreateRunDatasetDataSourceRequired, total=False):
    """dataset data source"""

    range: Optional[str]
    #: type=dataset: the dataset version to read (default: the latest when the run is created)
    version: int
    #: type=dataset: read only the items of this split
    split: str


class _CreateRunContainerDataSourceRequired(TypedDict):
    type: Literal["container"]
    #: type=container, sessions, traces or tool_steps: container id or label
    container: str


class CreateRunContainerDataSource(_CreateRunContainerDataSourceRequired, total=False):
    """container data source"""

    range: Optional[str]


class _CreateRunGenerateDataSourcePromptsItemRequired(TypedDict):
    #: The prompt’s name or id
    name: str


class CreateRunGenerateDataSourcePromptsItem(_CreateRunGenerateDataSourcePromptsItemRequired, total=False):
    """A prompt version: a version or a label (neither: the latest)"""

    version: int
    #: Resolved to its version when the run is created
    label: str


class CreateRunGenerateDataSourceParameters(TypedDict, total=False):
    """type=generate: sampling parameters of every generation call (over a prompt version’s own)"""

    temperature: float
    max_tokens: int
    top_p: float
    stop: Union[str, List[str]]
    presence_penalty: float
    frequency_penalty: float
    seed: int


class CreateRunGenerateDataSource(TypedDict, total=False):
    """generate data source"""

    type: Literal["generate"]
    #: type=generate: model ids or slugs
    models: List[str]
    range: Optional[str]
    #: type=generate: prompt versions to render over each item (an experiment): one launch per version × model
    prompts: List[CreateRunGenerateDataSourcePromptsItem]
    #: type=generate: sampling parameters of every generation call (over a prompt version’s own)
    parameters: CreateRunGenerateDataSourceParameters


class CreateRunSessionsDataSourceFilter(TypedDict, total=False):
    """type=sessions, traces or tool_steps: which sessions, traces or tool steps (min_turns, max_turns and sessions: sessions and tool steps only; tools: tool steps only)"""

    #: Sessions active at or after
    since: str
    #: Sessions started before (default: the run’s creation)
    until: str
    model: str
    errors: bool
    min_turns: int
    max_turns: int
    #: type=sessions or tool_steps: only these sessions (ids)
    sessions: List[str]
    #: type=tool_steps: only the calls of these tools (names)
    tools: List[str]


class _CreateRunSessionsDataSourceRequired(TypedDict):
    type: Literal["sessions"]
    #: type=container, sessions, traces or tool_steps: container id or label
    container: str


class CreateRunSessionsDataSource(_CreateRunSessionsDataSourceRequired, total=False):
    """sessions data source"""

    range: Optional[str]
    #: type=sessions, traces or tool_steps: which sessions, traces or tool steps (min_turns, max_turns and sessions: sessions and tool steps only; tools: tool steps only)
    filter: CreateRunSessionsDataSourceFilter


class _CreateRunTracesDataSourceRequired(TypedDict):
    type: Literal["traces"]
    #: type=container, sessions, traces or tool_steps: container id or label
    container: str


class CreateRunTracesDataSource(_CreateRunTracesDataSourceRequired, total=False):
    """traces data source"""

    range: Optional[str]
    #: type=sessions, traces or tool_steps: which sessions, traces or tool steps (min_turns, max_turns and sessions: sessions and tool steps only; tools: tool steps only)
    filter: CreateRunSessionsDataSourceFilter


class _CreateRunToolStepsDataSourceRequired(TypedDict):
    type: Literal["tool_steps"]
    #: type=container, sessions, traces or tool_steps: container id or label
    container: str


class CreateRunToolStepsDataSource(_CreateRunToolStepsDataSourceRequired, total=False):
    """tool_steps data source"""

    range: Optional[str]
    #: type=sessions, traces or tool_steps: which sessions, traces or tool steps (min_turns, max_turns and sessions: sessions and tool steps only; tools: tool steps only)
    filter: CreateRunSessionsDataSourceFilter


class _CreateRunSimulateDataSourceRequired(TypedDict):
    type: Literal["simulate"]
    #: type=generate: model ids or slugs
    models: List[str]
    #: type=simulate: the simulated user’s model
    user_model: str


class CreateRunSimulateDataSource(_CreateRunSimulateDataSourceRequired, total=False):
    """simulate data source"""

    range: Optional[str]
    #: type=simulate: user messages at most (default 5)
    max_turns: int
    #: type=simulate: offer the tools the row declares (default from_row)
    tools: Literal["from_row", "none"]


class CreateRunCache(TypedDict, total=False):
    """The response cache for the run's generation and judge calls: a run re-run with it pays nothing for the calls it made before"""

    #: use (default): answer identical calls from the cache; refresh: call and overwrite
    mode: Literal["use", "refresh"]
    #: Lifetime of the entries written
    ttl_seconds: int


class _CreateRunRequired(TypedDict):
    #: Container id or label
    container: str
    #: Evaluator ids or names
    evaluators: List[str]


class CreateRun(_CreateRunRequired, total=False):
    sample: Optional[Union[CreateRunDatasetDataSource, CreateRunContainerDataSource, CreateRunGenerateDataSource, CreateRunSessionsDataSource, CreateRunTracesDataSource, CreateRunToolStepsDataSource, CreateRunSimulateDataSource]]
    ground_truth: Optional[Union[CreateRunDatasetDataSource, CreateRunContainerDataSource, CreateRunGenerateDataSource, CreateRunSessionsDataSource, CreateRunTracesDataSource, CreateRunToolStepsDataSource, CreateRunSimulateDataSource]]
    baseline: Optional[Union[CreateRunDatasetDataSource, CreateRunContainerDataSource, CreateRunGenerateDataSource, CreateRunSessionsDataSource, CreateRunTracesDataSource, CreateRunToolStepsDataSource, CreateRunSimulateDataSource]]
    name: Optional[str]
    metadata: Optional[Dict[str, Any]]
    cache: Optional[CreateRunCache]
    environment: Optional[str]


class PatchRun(TypedDict):
    """A new name for the run; null removes it"""

    name: Optional[str]


class _CreateMonitorBackfillRequired(TypedDict):
    #: Calls recorded at or after
    since: str


class CreateMonitorBackfill(_CreateMonitorBackfillRequired, total=False):
    """Also score the container's calls of this past window"""

    #: Calls recorded before
    until: str


class _CreateMonitorRequired(TypedDict):
    #: Unique in the project. Must not start with mon_ or with/end in spaces
    name: str
    #: Container id or label
    container: str
    #: Evaluator ids or names (none that needs ground truth)
    evaluators: List[str]


class CreateMonitor(_CreateMonitorRequired, total=False):
    #: Share of the matching calls scored, 0 < r <= 1 (default 1)
    sampling_rate: float
    #: What is scored: 'call' (default; each sampled task log) or 'session' (each sampled session, once it has been idle for idle_seconds)
    unit: Literal["call", "session"]
    #: unit 'session': seconds without a call after which a session is scored (default 300)
    idle_seconds: int
    filter: MonitorFilter
    enabled: bool
    environment: str
    alert: Optional[MonitorAlert]
    #: Also score the container's calls of this past window
    backfill: CreateMonitorBackfill


class PatchMonitor(TypedDict, total=False):
    #: Unique in the project. Must not start with mon_ or with/end in spaces
    name: str
    #: Share of the matching calls scored, 0 < r <= 1 (default 1)
    sampling_rate: float
    filter: MonitorFilter
    enabled: bool
    alert: Optional[MonitorAlert]


class _CreateAnnotationQueueRequired(TypedDict):
    #: Unique in the project. Must not start with aq_ or with/end in spaces
    name: str
    #: The rubric: evaluators (ids or names) whose scales reviewers score on
    evaluators: List[str]


class CreateAnnotationQueue(_CreateAnnotationQueueRequired, total=False):
    description: Optional[str]
    #: The rubric asks for a free-text comment too
    comment: bool
    #: How many different people review each item (1)
    reviewers_per_item: int
    #: How long a claim holds an item before it returns to the queue (1800)
    claim_seconds: int


class PatchAnnotationQueue(TypedDict, total=False):
    #: Unique in the project. Must not start with aq_ or with/end in spaces
    name: str
    description: Optional[str]
    #: The rubric: evaluators (ids or names) whose scales reviewers score on
    evaluators: List[str]
    comment: bool
    claim_seconds: int


class AddAnnotationItemsToolStepsItem(TypedDict):
    """A tool step: one tool call of a session"""

    #: Session id
    session: str
    #: The tool call’s id in the session
    tool_call_id: str


class _AddAnnotationItemsRunSamplesItemRequired(TypedDict):
    run: str
    position: int


class AddAnnotationItemsRunSamplesItem(_AddAnnotationItemsRunSamplesItemRequired, total=False):
    #: Launch index (0)
    launch: int


class AddAnnotationItemsRulesItem(TypedDict, total=False):
    #: The run whose positions are chosen
    run: str
    #: A monitor (id or name) whose scored calls are chosen (instead of a run)
    monitor: str
    #: The evaluator whose rows are read (the rubric's first)
    evaluator: str
    #: Positions the evaluator failed
    failed: bool
    #: A random share of the run's positions, the same for the same seed
    share: float
    #: Seed of the share (0)
    seed: int
    #: Positions scored at least this
    score_min: float
    #: Positions scored at most this
    score_max: float


class AddAnnotationItems(TypedDict, total=False):
    #: Task log ids
    task_logs: List[str]
    #: Session ids
    sessions: List[str]
    #: Tool steps (kind tool_step, ref `<session id>#<tool call id>`)
    tool_steps: List[AddAnnotationItemsToolStepsItem]
    run_samples: List[AddAnnotationItemsRunSamplesItem]
    #: Each rule selects the positions of a run (or the calls a monitor scored) where all its criteria hold; the rules add up
    rules: List[AddAnnotationItemsRulesItem]


class _SubmitReviewScoresItemRequired(TypedDict):
    #: A rubric evaluator (id or name)
    evaluator: str


class SubmitReviewScoresItem(_SubmitReviewScoresItemRequired, total=False):
    #: ordinal and continuous scales (pass_fail: 0 or 1)
    score: float
    #: pass_fail scales
    passed: bool
    #: labels scales
    label: str


class _SubmitReviewRequired(TypedDict):
    scores: List[SubmitReviewScoresItem]


class SubmitReview(_SubmitReviewRequired, total=False):
    comment: Optional[str]


class FlagItem(TypedDict):
    reason: str


class CorrectReview(TypedDict, total=False):
    score: float
    passed: bool
    label: str
    comment: Optional[str]


class _ExportReviewedRequired(TypedDict):
    #: Label of the new dataset
    label: str


class ExportReviewed(_ExportReviewedRequired, total=False):
    #: Whose human score is `expected` (the rubric's first)
    evaluator: str


class CreatePromptParameters(TypedDict, total=False):
    """Sampling parameters sent with the call unless the request gives its own"""

    temperature: float
    max_tokens: int
    top_p: float
    stop: Union[str, List[str]]
    presence_penalty: float
    frequency_penalty: float
    seed: int


class CreatePromptResponseFormat(TypedDict):
    """A chat completion's response_format"""

    type: Union[Literal["text"], Literal["json_object"], Literal["json_schema"]]


class _CreatePromptRequired(TypedDict):
    #: Unique in the project
    name: str
    messages: List[PromptVersionMessagesItem]


class CreatePrompt(_CreatePromptRequired, total=False):
    description: Optional[str]
    #: Declared variable types; a variable the messages use and this omits is a string
    variables: Dict[str, Union[Literal["string"], Literal["number"], Literal["boolean"], Literal["json"]]]
    model: Optional[str]
    #: Sampling parameters sent with the call unless the request gives its own
    parameters: CreatePromptParameters
    tools: Optional[List[PromptVersionToolsItem]]
    response_format: Optional[CreatePromptResponseFormat]
    commit_message: Optional[str]
    #: Labels moved to the new version
    labels: List[str]


class _CreatePromptVersionRequired(TypedDict):
    messages: List[PromptVersionMessagesItem]


class CreatePromptVersion(_CreatePromptVersionRequired, total=False):
    #: Declared variable types; a variable the messages use and this omits is a string
    variables: Dict[str, Union[Literal["string"], Literal["number"], Literal["boolean"], Literal["json"]]]
    model: Optional[str]
    #: Sampling parameters sent with the call unless the request gives its own
    parameters: CreatePromptParameters
    tools: Optional[List[PromptVersionToolsItem]]
    response_format: Optional[CreatePromptResponseFormat]
    commit_message: Optional[str]
    #: Labels moved to the new version
    labels: List[str]


class MoveLabel(TypedDict):
    version: int


class _SettleItemRequired(TypedDict):
    #: majority: the answer most reviewers gave (409 on a tie); review: the answer of the review named; value: the answer given here
    method: Literal["majority", "review", "value"]


class SettleItem(_SettleItemRequired, total=False):
    #: The rubric evaluator (the rubric's first)
    evaluator: str
    #: With method review
    review: str
    #: With method value, on a numeric scale
    score: float
    #: With method value, on a pass/fail scale
    passed: bool
    #: With method value, on a labels scale
    label: str
    comment: Optional[str]


class _SettleQueueRequired(TypedDict):
    #: Every open disagreement by majority (ties stay open)
    method: Literal["majority"]


class SettleQueue(_SettleQueueRequired, total=False):
    evaluator: str


class CreateGuardPolicyAppliesTo(TypedDict, total=False):
    """A call matching any entry; all empty: every call of the project"""

    #: Containers, id or label
    containers: List[str]
    #: API keys of the project, by id
    keys: List[str]
    #: Model names as requests give them
    models: List[str]


class _CreateGuardPolicyChecksItemRequired(TypedDict):
    #: The verdict score’s name
    name: str
    guard: Union[GuardPolicyChecksItemGuardVariant1, GuardPolicyChecksItemGuardVariant2, GuardPolicyChecksItemGuardVariant3, GuardPolicyChecksItemGuardVariant4, GuardPolicyChecksItemGuardVariant5, GuardPolicyChecksItemGuardVariant6, GuardPolicyChecksItemGuardVariant7, GuardPolicyChecksItemGuardVariant8, GuardPolicyChecksItemGuardVariant9]


class CreateGuardPolicyChecksItem(_CreateGuardPolicyChecksItemRequired, total=False):
    #: input: before the upstream call; parallel: beside it (a block cancels it); output: on the answer
    stage: Union[Literal["input"], Literal["output"], Literal["parallel"]]
    action: Union[Literal["block"], Literal["flag"], Literal["redact"]]
    timeout_ms: int
    #: A check that times out or fails: open lets the call through, closed blocks it
    on_error: Union[Literal["open"], Literal["closed"]]
    #: Output checks on streams: as the text arrives (prefix-judging guards) or once it is complete
    streaming: Union[Literal["incremental"], Literal["hold"]]


class _CreateGuardPolicyRequired(TypedDict):
    name: str
    checks: List[CreateGuardPolicyChecksItem]


class CreateGuardPolicy(_CreateGuardPolicyRequired, total=False):
    description: Optional[str]
    enabled: bool
    #: A call matching any entry; all empty: every call of the project
    applies_to: CreateGuardPolicyAppliesTo


class PatchGuardPolicy(TypedDict, total=False):
    name: str
    description: Optional[str]
    enabled: bool
    #: A call matching any entry; all empty: every call of the project
    applies_to: CreateGuardPolicyAppliesTo
    checks: List[CreateGuardPolicyChecksItem]


class _PlaygroundRunRequired(TypedDict):
    messages: List[PromptVersionMessagesItem]
    #: The models answering side by side (1 to 4), each by slug, label or id
    models: List[str]


class PlaygroundRun(_PlaygroundRunRequired, total=False):
    #: Values of the messages' {{variables}}
    variables: Dict[str, Any]
    #: Declared variable types; a variable the messages use and this omits is a string
    variable_types: Dict[str, Union[Literal["string"], Literal["number"], Literal["boolean"], Literal["json"]]]
    tools: Optional[List[PromptVersionToolsItem]]
    response_format: Optional[CreatePromptResponseFormat]
    #: Sampling parameters sent with the call unless the request gives its own
    parameters: CreatePromptParameters
    #: The project's evaluators (id or name) scoring each answer once it is complete
    evaluators: List[str]
    #: The expected answer evaluators compare with
    expected: Any
    prompt: Optional[PlaygroundRequestPrompt]


class _PlaygroundSaveVersionRequired(TypedDict):
    #: Prompt id or name; a new name creates it
    prompt: str
    messages: List[PromptVersionMessagesItem]


class PlaygroundSaveVersion(_PlaygroundSaveVersionRequired, total=False):
    #: Declared variable types; a variable the messages use and this omits is a string
    variable_types: Dict[str, Union[Literal["string"], Literal["number"], Literal["boolean"], Literal["json"]]]
    tools: Optional[List[PromptVersionToolsItem]]
    response_format: Optional[CreatePromptResponseFormat]
    #: Sampling parameters sent with the call unless the request gives its own
    parameters: CreatePromptParameters
    model: Optional[str]
    commit_message: Optional[str]
    #: Labels moved to the new version
    labels: List[str]


DataSource = Union[CreateRunDatasetDataSource, CreateRunContainerDataSource, CreateRunGenerateDataSource, CreateRunSessionsDataSource, CreateRunTracesDataSource, CreateRunToolStepsDataSource, CreateRunSimulateDataSource]


RunResultsData = RunDataResults


# Not in the OpenAPI document (a text/event-stream body): the events of GET /v1/evaluation/runs/{id}/events.


class RunEvent(TypedDict):
    """One server-sent event: ``status`` ({id, status, finished_at}), ``progress`` ({done, total}),
    ``spend`` ({spend, judge, generation}: what the run has paid so far, with its calls and tokens) or
    ``queue`` ({environment, live_workers, waiting_for_worker})."""

    event: str
    data: Dict[str, Any]
