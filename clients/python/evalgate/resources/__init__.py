"""The API's resources. To add one: a module here with a ``Resource`` subclass whose methods carry
``@operation(METHOD, path)`` as /openapi.json spells the path, an attribute in ``_client.py``'s
``_Base.__init__``, and its models in ``scripts/generate_types.py``'s ``NAMES``."""

from ._base import OPERATIONS, Resource, operation
from .api_keys import ApiKeys
from .containers import Containers
from .datasets import AsyncDatasets, Datasets
from .evaluators import Evaluators
from .guards import Guards
from .logs import TaskLogs
from .models import Models
from .monitors import Monitors
from .projects import Projects
from .prompts import AsyncPrompts, FetchedPrompt, Prompts
from .review import AnnotationQueues, EvaluatorReview
from .runs import AsyncRuns, Runs
from .sessions import Sessions
from .traces import Traces

__all__ = [
    "OPERATIONS",
    "Resource",
    "operation",
    "ApiKeys",
    "Containers",
    "Datasets",
    "AsyncDatasets",
    "Evaluators",
    "Guards",
    "TaskLogs",
    "Models",
    "Monitors",
    "Projects",
    "Prompts",
    "AsyncPrompts",
    "FetchedPrompt",
    "Runs",
    "AsyncRuns",
    "Sessions",
    "AnnotationQueues",
    "EvaluatorReview",
    "Traces",
]
