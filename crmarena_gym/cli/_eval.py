"""``crmarena-gym eval``: run a policy over a task set and print the accuracy, pass^k and cost table."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Any

from crmarena_gym._secrets import register_secret
from crmarena_gym.cli._voice import at_least_one

_EXAMPLES = """examples:
  crmarena-gym eval --env CRMArena-v0 --policy oracle --out runs/oracle
  crmarena-gym eval --env CRMArena-HTU-v0 --policy litellm:gpt-4o --framework react --trials 3 \\
      --concurrency 4 --out runs/gpt-4o-react
  crmarena-gym eval --tasks tasks_original.json --org crmarena_data.db --policy litellm:gpt-4o --framework fc \\
      --out runs/original
  crmarena-gym eval --env CRMArena-v0 --policy random --per-task 5 --out runs/random --resume
  crmarena-gym eval --env CRMArena-v0 --policy oracle --task NCR --task PVI --idx 395 --idx 912
  crmarena-gym eval --env CRMArena-HTU-v0 --policy litellm:gpt-4o --out runs/gpt-4o --resume --retry-errors
"""


def register(subparsers: Any) -> None:
    """Add the ``eval`` subcommand."""
    parser = subparsers.add_parser(
        "eval",
        help="evaluate a policy (oracle, reactive-oracle, random, an LLM through litellm) on a task set",
        description="Run a policy on every instance of a task set, --trials times each; write results.jsonl "
        "(one line per episode, as each ends) and metadata.json to --out, and print a table per task.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_argument_group("what to run")
    source.add_argument(
        "--env",
        default=None,
        metavar="ID",
        help="a registered env id (CRMArena-HTU-v0 ...; default CRMArena-v0, all nine tasks)",
    )
    source.add_argument("--tasks", default=None, metavar="FILE", help="a task file (default: the generated test set)")
    source.add_argument("--org", default=None, metavar="PATH", help="an org database (default: the embedded org)")
    source.add_argument(
        "--task-distribution",
        choices=("discriminating", "legacy"),
        default=None,
        help="the generated test set's distribution (default discriminating; legacy: task generator version 2's "
        "instances, to reproduce figures made with them); not with --tasks",
    )
    source.add_argument(
        "--task",
        action="append",
        default=None,
        metavar="ABBR",
        help="only the instances of this task (HTU, NCR ... or a task name); repeatable",
    )
    source.add_argument(
        "--idx", action="append", type=int, default=None, metavar="I", help="only the instance I; repeatable"
    )
    source.add_argument(
        "--per-task", type=at_least_one, default=None, metavar="N", help="only the first N instances of each task"
    )
    source.add_argument(
        "--limit",
        type=at_least_one,
        default=None,
        metavar="N",
        help="only the first N instances (after the choices above)",
    )
    source.add_argument(
        "--toolset", choices=("soql", "functions", "flex"), default=None, help="default: what the policy needs"
    )
    source.add_argument(
        "--allow-foreign-tasks",
        action="store_true",
        help="run a task file whose gold answers name records the org lacks (refused by default: such tasks "
        "were made for another org and would score near 0)",
    )
    source.add_argument("--match", choices=("strict", "lenient"), default="strict", help="answer matching")
    source.add_argument(
        "--wrapper",
        action="append",
        default=None,
        metavar="NAME[:JSON]",
        help='a wrapper around each environment, innermost first; repeatable: ToolResultDropout:{"p": 0.2, '
        '"mode": "error"}, TurnLimit:{"max_turns": 10}, FunctionRemoval:{"groups": ["calculation"]}',
    )
    source.add_argument("--not-aided", action="store_true", help="hide the domain details (quarters, seasons ...)")
    source.add_argument(
        "--user",
        default=None,
        metavar="KIND",
        help="play conversations with a simulated user: scripted, or litellm:MODEL (the env's Interactive id; "
        "an Interactive id alone uses the scripted user)",
    )
    source.add_argument(
        "--user-api-base", default=None, metavar="URL", help="litellm user: an OpenAI-compatible server's URL"
    )
    policy = parser.add_argument_group("the policy")
    policy.add_argument(
        "--policy",
        required=True,
        metavar="SPEC",
        help="oracle, reactive-oracle, random, litellm:MODEL or python:MODULE:CLASS",
    )
    policy.add_argument(
        "--framework",
        choices=("act", "react", "fc"),
        default=None,
        help="litellm: the framework (default react: text replies with the SOQL/SOSL toolset; TRL's environment "
        "class trains fc, function calling with the task functions: pass --framework fc to evaluate that)",
    )
    policy.add_argument("--temperature", type=float, default=None, help="litellm: sampling temperature")
    policy.add_argument("--max-tokens", type=int, default=None, help="litellm: the longest reply")
    policy.add_argument("--timeout", type=float, default=None, help="litellm: seconds per request")
    policy.add_argument("--max-retries", type=int, default=None, help="litellm: retries per call (backoff)")
    policy.add_argument("--api-base", default=None, help="litellm: an OpenAI-compatible server's URL")
    policy.add_argument(
        "--api-key-env", default=None, metavar="VAR", help="litellm: read the API key from this environment variable"
    )
    run = parser.add_argument_group("the run")
    run.add_argument("--trials", type=at_least_one, default=1, metavar="K", help="episodes per instance (pass^1..K)")
    run.add_argument("--concurrency", type=at_least_one, default=1, metavar="N", help="episodes at once (threads)")
    run.add_argument("--out", default=None, metavar="DIR", help="the run directory (results.jsonl, metadata.json)")
    run.add_argument("--resume", action="store_true", help="finish the run in --out (played episodes are kept)")
    run.add_argument(
        "--retry-errors",
        action="store_true",
        help="with --resume: play again the episodes that ended in llm_error, policy_error or env_error",
    )
    run.add_argument("--seed", type=int, default=0, help="the run's seed")
    run.add_argument(
        "--no-progress", action="store_true", help="no progress bar (drawn on stderr by default, piped or not)"
    )
    run.add_argument("--ray", action="store_true", help="spread episodes over a Ray cluster")
    run.add_argument(
        "--ray-address",
        "--address",
        dest="ray_address",
        default=None,
        metavar="ADDR",
        help="with --ray: a running Ray cluster (host:port, ray://host:10001, or auto; default: a local one)",
    )
    parser.set_defaults(func=run_eval)


def _policy_options(args: argparse.Namespace) -> dict[str, Any]:
    llm = {
        "framework": args.framework,
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "timeout": args.timeout,
        "max_retries": args.max_retries,
        "api_base": args.api_base,
    }
    given = {k: v for k, v in llm.items() if v is not None}
    kind = args.policy.partition(":")[0].lower()
    if args.api_key_env:
        if args.api_key_env not in os.environ:
            raise ValueError(f"--api-key-env names {args.api_key_env!r}, which is not set in the environment")
        given["api_key"] = os.environ[args.api_key_env]
        register_secret(given["api_key"])  # whatever the variable is called, its value is never shown
    if kind != "litellm" and given:
        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        raise ValueError(f"{flags} apply to litellm policies only, not to {args.policy!r}")
    if kind == "random":
        given["seed"] = args.seed
    return given


def run_eval(args: argparse.Namespace) -> int:
    """Run the evaluation; print the table; return the exit code."""
    from crmarena_gym.envs import interactive_counterpart
    from crmarena_gym.eval import RunStoppedError, evaluate, format_table
    from crmarena_gym.policies import PolicyError
    from crmarena_gym.users import LLMUser, LLMUserError, make_user

    if args.resume and args.out is None:
        print("crmarena-gym eval: --resume finishes the run in --out DIR; give --out", file=sys.stderr)
        return 2
    if args.retry_errors and not args.resume:
        print(
            "crmarena-gym eval: --retry-errors replays an existing run's failed episodes: add --resume", file=sys.stderr
        )
        return 2
    if args.task_distribution is not None and args.tasks is not None:
        print(
            "crmarena-gym eval: --task-distribution chooses a generated set; it does not apply to --tasks",
            file=sys.stderr,
        )
        return 2
    tasks: Any = args.tasks
    if args.task_distribution is not None:
        tasks = {"split": "test", "distribution": args.task_distribution}
    env_kwargs: dict[str, Any] = {"match": args.match}
    if args.toolset:
        env_kwargs["toolset"] = args.toolset
    if args.not_aided:
        env_kwargs["aided"] = False
    env_id = args.env or "CRMArena-v0"
    if args.user_api_base is not None and not (args.user or "").startswith("litellm:"):
        print("crmarena-gym eval: --user-api-base is for --user litellm:MODEL", file=sys.stderr)
        return 2
    if args.user is not None:
        user_options = {"api_base": args.user_api_base} if args.user_api_base is not None else {}
        try:
            user = make_user(args.user, **user_options)
            env_id = interactive_counterpart(env_id)
            if isinstance(user, LLMUser):
                user.check_ready()  # a missing key refuses the run here, not after retries at the first reset
        except (ValueError, LLMUserError, ImportError) as err:
            print(f"crmarena-gym eval: --user: {err}", file=sys.stderr)
            return 2
        env_kwargs["user"] = args.user
        if user_options:
            env_kwargs["user_options"] = user_options
    if args.policy.partition(":")[0].lower() == "litellm" and args.framework is None:
        # The default differs from what TRL trains: say which is which, once, before the run.
        print(
            "crmarena-gym eval: framework react (the default: text replies, SOQL/SOSL toolset); TRL's environment "
            "class trains fc (function calling, the task functions): pass --framework fc to evaluate what TRL trains",
            file=sys.stderr,
        )
    try:
        wrappers = [_wrapper_spec(text) for text in args.wrapper or ()]
        run = evaluate(
            args.policy,
            env_id=env_id,
            tasks=tasks,
            org=args.org,
            policy_options=_policy_options(args),
            env_kwargs=env_kwargs,
            wrappers=wrappers,
            trials=args.trials,
            concurrency=args.concurrency,
            out=args.out,
            resume=args.resume,
            retry_errors=args.retry_errors,
            limit=args.limit,
            select_tasks=args.task,
            idx=args.idx,
            per_task=args.per_task,
            seed=args.seed,
            allow_foreign_tasks=args.allow_foreign_tasks,
            progress=False if args.no_progress else None,
            ray=args.ray,
            ray_address=args.ray_address,
            command=["crmarena-gym", *sys.argv[1:]] if sys.argv else None,
        )
    except KeyboardInterrupt:
        print(_interrupted_hint(args), file=sys.stderr)
        raise
    except (ValueError, TypeError, ImportError, KeyError, RunStoppedError, PolicyError) as err:
        print(f"crmarena-gym eval: {err}", file=sys.stderr)
        return 2
    except LLMUserError as err:  # the user's model failed past its retries: the run stops, its episodes kept
        print(f"crmarena-gym eval: {err}{_user_failed_hint(args)}", file=sys.stderr)
        return 1
    except OSError as err:  # a missing file, an unwritable --out, a directory another run holds ...
        print(f"crmarena-gym eval: {_os_error(err)}{_resume_hint(err, args)}", file=sys.stderr)
        return 2
    print(format_table(run.summary))
    if run.out is not None:
        print(f"\n{len(run.results)} episodes ({run.new_episodes} new) in {run.out}", file=sys.stderr)
    return 0


def _wrapper_spec(text: str) -> dict[str, Any]:
    """``NAME`` or ``NAME:{json arguments}`` as a wrapper spec.

    Example:
        >>> _wrapper_spec('TurnLimit:{"max_turns": 5}')
        {'name': 'TurnLimit', 'kwargs': {'max_turns': 5}}
    """
    import json

    name, brace, rest = text.partition(":{")
    if not brace:
        return {"name": text, "kwargs": {}}
    try:
        kwargs = json.loads("{" + rest)
    except json.JSONDecodeError as err:
        raise ValueError(f"--wrapper {text!r}: the arguments after {name}: are not a JSON object ({err})") from None
    return {"name": name, "kwargs": kwargs}


def _interrupted_hint(args: argparse.Namespace) -> str:
    """What an interrupted run kept, and the command that finishes it."""
    if not args.out:
        return "crmarena-gym eval: interrupted; nothing was kept (no --out): give --out DIR to keep episodes"
    argv = list(getattr(args, "argv", None) or sys.argv[1:])
    if "--resume" not in argv:
        argv.append("--resume")
    command = " ".join(shlex.quote(a) for a in ["crmarena-gym", *argv])
    return (
        f"crmarena-gym eval: interrupted; the episodes finished so far are kept in {args.out!r}. "
        f"To play the rest: {command}"
    )


def _user_failed_hint(args: argparse.Namespace) -> str:
    """After the user's model failed: what the run kept, and how to go on once the model answers."""
    if not args.out:
        return ". Nothing was kept (no --out)"
    return f". The episodes finished so far are kept in {args.out!r}: once the model answers, rerun with --resume"


def _resume_hint(err: OSError, args: argparse.Namespace) -> str:
    """For a failure writing the run directory (a full disk): the episodes written are kept; how to go on."""
    if not args.out or not err.filename:
        return ""
    out = os.path.abspath(args.out)
    if os.path.commonpath([out, os.path.abspath(os.fsdecode(err.filename))]) != out:
        return ""
    return (
        f". The episodes already in {args.out!r} are kept: once the cause is fixed (free some space), rerun "
        "the same command with --resume to play the rest"
    )


def _os_error(err: OSError) -> str:
    """One line for an OSError: the file it concerns and what went wrong."""
    if err.filename is None or not err.strerror:
        return str(err)  # our own messages (a held lock) already say it all
    return f"cannot use {os.fsdecode(err.filename)!r}: {err.strerror}"
