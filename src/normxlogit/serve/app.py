"""The web app behind ``normxlogit serve``: a JSON API over the library and the static page.

Everything slow (loading a model, explaining, evaluating) is a job: the request returns
the job's id at once and the page polls it, so the server stays responsive and the user
can cancel. Requests are bounded in size, models and files come only from what the
command line named, and errors come back as one readable message.
"""

from __future__ import annotations

import re
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Query, Request
from fastapi import Path as PathValue
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from ..common.errors import InvalidInputError, NormXLogitError
from .browse import BenchBrowser, BenchEntry
from .examples import ExampleSources
from .jobs import JobRunner
from .models import ModelPool
from .work import (
    ExplainRequest,
    Runs,
    check_evaluable,
    evaluate_job,
    explain_job,
    model_info,
    perturbed,
)

#: bounds on what one request may ask for
MAX_BODY_BYTES = 64 * 1024
MAX_TEXT_CHARS = 4000
MAX_METHODS = 8
MAX_NEW_TOKENS = 64
MAX_EXAMPLES = 200
MAX_SEGMENTS = 200
MAX_INDEX = 2**31 - 1  # instance numbers and list positions; SQLite stops at 2**63

STATIC = files("normxlogit.serve") / "static"

#: query values, bounded like everything a request carries
ExperimentName = Annotated[str, Query(max_length=500)]
MethodName = Annotated[str, Query(max_length=200)]
MetricName = Annotated[str, Query(max_length=40)]
InstanceIndex = Annotated[int, Query(ge=0, le=MAX_INDEX)]
BenchIndex = Annotated[int, PathValue(ge=0, le=MAX_INDEX)]
Ratio = Annotated[float, Query(ge=0.0, le=1.0, allow_inf_nan=False)]


@dataclass
class ServeSettings:
    """What the page may use: models, bench results and example files."""

    models: ModelPool
    bench: list[BenchEntry] = field(default_factory=list)
    data: list[Path] = field(default_factory=list)
    workers: int = 1


class _Body(BaseModel):
    #: a misspelt field ("targets", "layers") is refused, not dropped with its setting
    model_config = ConfigDict(extra="forbid")


class ExplainBody(_Body):
    model: str = Field(max_length=200)
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    text_pair: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    methods: list[str] = Field(min_length=1, max_length=MAX_METHODS)
    target: str | None = Field(default=None, max_length=200)
    #: "why the target rather than this": a label or token; a generation's continuation
    contrast: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    contrast_input: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    layer: Literal["final", "all"] = "final"
    generate: bool = False
    max_new_tokens: int = Field(default=16, ge=1, le=MAX_NEW_TOKENS)
    continuation: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    #: "sentences", or the text's segments as written in it, in order (issue 42)
    segments: str | list[Annotated[str, Field(max_length=MAX_TEXT_CHARS)]] | None = None
    segment_reduce: Literal["sum", "mean", "max", "absmax"] | None = None


class EvaluateBody(_Body):
    run: str = Field(max_length=40)
    metrics: list[str] = Field(min_length=1, max_length=12)
    #: what the metrics rank and perturb: tokens, or the explanations' segments
    unit: Literal["token", "segment"] = "token"


#: the fields of each posted body, for the refusal of one it lacks
_BODY_FIELDS = {
    "/api/explain": list(ExplainBody.model_fields),
    "/api/evaluate": list(EvaluateBody.model_fields),
}


def create_app(settings: ServeSettings) -> FastAPI:
    """The app; :func:`normxlogit.serve.serve` runs it with uvicorn."""
    jobs = JobRunner(settings.workers)
    browser = BenchBrowser(settings.bench)
    browser.check()  # a compressed store that does not read is refused now, not per request

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        jobs.shutdown()  # the server stops: running jobs stop at their next check
        browser.close()  # decompressed copies of compressed stores

    app = FastAPI(
        title="normxlogit", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan
    )
    runs = Runs()
    pool = settings.models
    examples = ExampleSources(settings.data)
    app.state.jobs = jobs

    app.add_middleware(BoundedBody, limit=MAX_BODY_BYTES)

    @app.exception_handler(NormXLogitError)
    async def refused(request: Request, error: NormXLogitError):
        return _error(400, str(error))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException):
        return _error(error.status_code, _http_message(error))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError):
        items = _telling(error.errors())
        problems = [_problem(i) for i in items if i.get("type") != "extra_forbidden"]
        unknown = [_where(i) for i in items if i.get("type") == "extra_forbidden"]
        if unknown:  # named once, with the fields the body has
            known = _BODY_FIELDS.get(request.url.path)
            fields = f" (its fields: {', '.join(known)})" if known else ""
            many = "s" if len(unknown) > 1 else ""
            problems.insert(0, f"the request body has no field{many} {', '.join(unknown)}{fields}")
        return _error(422, "; ".join(problems))

    @app.exception_handler(Exception)
    async def failed(request: Request, error: Exception):
        return _error(500, f"internal error ({type(error).__name__}); see the server's log")

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(str(STATIC / "index.html"), media_type="text/html")

    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")

    @app.get("/api/info")
    def info() -> dict[str, Any]:
        return {
            "models": [
                {"name": e.name, "description": e.description, "loaded": pool.is_loaded(e.name)}
                for e in pool.entries.values()
            ],
            "methods": _methods(),
            "metrics": _metrics(),
            "datasets": examples.listing(),
            "bench": browser.listing(),
            "limits": {
                "text": MAX_TEXT_CHARS,
                "methods": MAX_METHODS,
                "max_new_tokens": MAX_NEW_TOKENS,
            },
        }

    @app.post("/api/models/{name}/load")
    def load_model(name: str) -> dict[str, Any]:
        pool.entry(name)  # an unknown name is refused now, not in the job

        def work(job):
            job.report(0.0, f"loading {name}")
            return model_info(pool, name)

        return jobs.submit("load", work).view()

    @app.post("/api/explain")
    def explain(body: ExplainBody) -> dict[str, Any]:
        pool.entry(body.model)
        text: str | tuple[str, str] = (
            (body.text, body.text_pair) if body.text_pair and body.text_pair.strip() else body.text
        )
        if body.continuation is not None and body.generate:
            raise InvalidInputError("give a continuation or ask to generate one, not both")
        if body.layer == "all" and (body.generate or body.continuation):
            # the page has no layer view for a generation: every layer would be computed,
            # then all but one dropped
            raise InvalidInputError(
                "a generation is shown at its final layer; choose Layers: final layer"
            )
        request = ExplainRequest(
            model=body.model,
            text=text,
            methods=tuple(dict.fromkeys(body.methods)),
            target=body.target,
            contrast=body.contrast or None,
            contrast_input=body.contrast_input or None,
            layer="all" if body.layer == "all" else None,
            generate=body.generate,
            max_new_tokens=body.max_new_tokens,
            continuation=body.continuation or None,
            **_segments(body),
        )
        _check_methods(request.methods)
        return jobs.submit("explain", lambda job: explain_job(pool, runs, request, job)).view()

    @app.post("/api/evaluate")
    def evaluate(body: EvaluateBody) -> dict[str, Any]:
        metrics = list(dict.fromkeys(body.metrics))
        _check_metrics(metrics)
        check_evaluable(runs.get(body.run), body.unit, metrics)
        return jobs.submit(
            "evaluate", lambda job: evaluate_job(pool, runs, body.run, metrics, job, body.unit)
        ).view()

    @app.get("/api/jobs/{job_id}")
    def job_state(job_id: str) -> dict[str, Any]:
        return _job(jobs, job_id).view()

    @app.post("/api/jobs/{job_id}/cancel")
    def cancel(job_id: str) -> dict[str, Any]:
        job = _job(jobs, job_id)
        job.cancel()
        return job.view()

    @app.get("/api/runs/{run_id}/perturbed")
    def perturbed_tokens(
        run_id: str, method: MethodName, metric: MetricName, ratio: Ratio
    ) -> dict[str, Any]:
        return perturbed(pool, runs, run_id, method, metric, ratio)

    @app.get("/api/datasets/{name}/examples")
    def dataset_examples(
        name: str,
        model: str | None = Query(default=None, max_length=200),
        limit: int = Query(default=50, ge=1, le=MAX_EXAMPLES),
    ) -> dict[str, Any]:
        # a built-in name or folder; a model loaded in this process: itself
        source = pool.entry(model).source if model else None
        return examples.examples(name, limit, source, shown=model)

    @app.get("/api/bench/{index}/tables")
    def bench_tables(index: BenchIndex) -> dict[str, Any]:
        return browser.tables(index)

    @app.get("/api/bench/{index}/plots/{name}.png")
    def bench_plot(index: BenchIndex, name: str) -> Response:
        return Response(browser.plot(index, name), media_type="image/png")

    # an experiment's name holds slashes (model path: dataset/split), so it is a query value
    @app.get("/api/bench/{index}/experiment")
    def bench_experiment(index: BenchIndex, name: ExperimentName) -> dict[str, Any]:
        return browser.experiment(index, name)

    @app.get("/api/bench/{index}/instances")
    def bench_instances(
        index: BenchIndex, experiment: ExperimentName, method: MethodName, metric: MetricName
    ) -> dict[str, Any]:
        return browser.instances(index, experiment, method, metric)

    @app.get("/api/bench/{index}/explanation")
    def bench_explanation(
        index: BenchIndex,
        experiment: ExperimentName,
        method: MethodName,
        instance: InstanceIndex,
    ) -> dict[str, Any]:
        return browser.explanation(index, experiment, method, instance)

    return app


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class BoundedBody:
    """Refuse a request body over ``limit`` bytes with 413, whether it says its length
    (Content-Length) or streams it in chunks: the body is counted as it is read."""

    def __init__(self, app: Any, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await _error(413, self.message)(scope, receive, send)
            return
        received = 0

        async def bounded_receive() -> dict:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise HTTPException(413, self.message)
            return message

        await self.app(scope, bounded_receive, send)

    @property
    def message(self) -> str:
        return f"a request may hold at most {self.limit // 1024} KiB"


def _http_message(error: HTTPException) -> str:
    """Starlette's and FastAPI's own refusals, in the page's words."""
    if error.status_code == 400 and error.detail == "There was an error parsing the body":
        return "the request body is not JSON in UTF-8; send a UTF-8 JSON object"
    return str(error.detail)


#: how pydantic tags the branch of a union a problem is about (``segments.str``)
_BRANCH = re.compile(r"(str|int|float|bool|none|list\[.*\]|dict\[.*\]|constrained-.*)")
_KINDS = {"str": "a string", "int": "a whole number", "float": "a number", "bool": "true or false"}


def _telling(errors: list[dict]) -> list[dict]:
    """The problems worth saying: of a field that may be one of several types (a union),
    only its branch of the value's own type (a list's too-long segment, not "should be a
    valid string" besides); a value of none of them says which types it may be."""
    fields: dict[tuple, list[dict]] = {}
    for item in errors:
        fields.setdefault(tuple(item.get("loc", ()))[:2], []).append(item)
    kept = []
    for where, items in fields.items():
        branches = [i for i in items if _branch(i) is not None]
        if not branches:
            kept += items
            continue
        telling = [i for i in branches if not str(i.get("type", "")).endswith("_type")]
        if telling:  # the branch the value is of: its own problems, the tag left out
            kept += [{**i, "loc": where + tuple(i["loc"][3:])} for i in telling]
            continue
        kinds = [
            _KINDS.get(tag, _listed_kind(tag) if tag.startswith("list") else tag)
            for tag in dict.fromkeys(_branch(i) for i in branches)
        ]
        kept.append({"loc": where, "msg": f"should be {' or '.join(kinds)}"})
    return kept


def _listed_kind(tag: str) -> str:
    """``list[constrained-str]`` in words: a list of strings."""
    inner = tag[len("list[") : -1]
    kind = _KINDS.get(inner.removeprefix("constrained-"))
    return f"a list of {kind.removeprefix('a ')}s" if kind else "a list"


def _branch(item: dict) -> str | None:
    """The union branch ``item`` is about (``str``, ``list[...]``), or None."""
    loc = item.get("loc", ())
    tag = loc[2] if len(loc) > 2 else None
    return tag if isinstance(tag, str) and _BRANCH.fullmatch(tag) else None


def _where(item: dict) -> str:
    """Where in the request a validation problem is (``text``, ``segments.0``)."""
    return ".".join(str(part) for part in item.get("loc", ())[1:]) or "request"


def _problem(item: dict) -> str:
    """One validation problem: where in the request, and what is wrong."""
    if item.get("type") == "json_invalid":
        reason = (item.get("ctx") or {}).get("error", "invalid")
        position = item.get("loc", ("body", "?"))[-1]
        return f"the request body is not valid JSON: {reason} at character {position}"
    where = _where(item)
    return f"{where}: {item.get('msg', 'invalid')}"


def _job(jobs: JobRunner, job_id: str):
    job = jobs.get(job_id)
    if job is None:
        raise InvalidInputError(f"no job {job_id!r} (finished jobs are forgotten after a while)")
    return job


def _methods() -> list[dict[str, Any]]:
    from ..methods import list_methods
    from ..methods.base import method_class

    listed = []
    for name in list_methods():
        cls = method_class(name)
        listed.append(
            {
                "name": name,
                "description": cls.description,
                "per_label": cls.per_label,
                "signed": cls.signed,
                "layers": cls.supports_layers,
                "gradients": cls.needs_gradients,
                # scores segments by removing them: needs the text's segments
                "segments": bool(getattr(cls, "needs_segments", False)),
            }
        )
    return listed


def _metrics() -> list[dict[str, Any]]:
    from ..evaluation import list_metrics, metric_info
    from ..evaluation.hard import HardMetric
    from ..evaluation.registry import metric_class
    from ..evaluation.segment_checks import SegmentCheck

    listed = []
    for name in list_metrics():
        info = metric_info(name)
        if info.needs_labels or info.needs_evidence:
            continue  # the page's text has no gold label or evidence
        listed.append(
            {
                "name": name,
                "description": info.description,
                "axis": info.axis,
                "higher_is_better": info.higher_is_better,
                "hard": issubclass(metric_class(name), HardMetric),  # perturbs whole tokens
                # removes segments from the text: needs explanations with segments
                "segments": issubclass(metric_class(name), SegmentCheck),
            }
        )
    return listed


def _segments(body: ExplainBody) -> dict[str, Any]:
    """The request's segments, checked: ``"sentences"``, or the text's segments (blank
    ones dropped), with the reduction of token scores."""
    segments, reduce = body.segments, body.segment_reduce
    if segments is None:
        if reduce is not None:
            raise InvalidInputError(
                "segment_reduce goes with segments; give segments ('sentences' or the "
                "text's segments), or leave segment_reduce out"
            )
        return {}
    if isinstance(segments, str):
        if segments != "sentences":
            raise InvalidInputError(
                f"segments {segments[:40]!r} is not 'sentences'; give 'sentences' or a list "
                "of the text's segments"
            )
        return {"segments": segments, "segment_reduce": reduce or "sum"}
    listed = tuple(part for part in segments if part.strip())
    if not listed:
        raise InvalidInputError(
            "no segments given: list the text's segments one per line, or choose sentences"
        )
    if len(listed) > MAX_SEGMENTS:
        raise InvalidInputError(
            f"{len(listed)} segments; the page takes at most {MAX_SEGMENTS}: join some"
        )
    return {"segments": listed, "segment_reduce": reduce or "sum"}


def _check_methods(methods: tuple[str, ...]) -> None:
    from ..methods import list_methods

    unknown = [m for m in methods if m not in list_methods()]
    if unknown:
        raise InvalidInputError(f"unknown method {unknown[0]!r}; see the method list")


def _check_metrics(metrics: list[str]) -> None:
    allowed = {m["name"] for m in _metrics()}
    unknown = [m for m in metrics if m not in allowed]
    if unknown:
        raise InvalidInputError(
            f"metric {unknown[0]!r} is not offered here; choose from {', '.join(sorted(allowed))}"
        )
