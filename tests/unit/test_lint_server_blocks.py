"""server-blocks-script: a server run in the foreground before the work that needs it.

Issue 32 item 4 names "a foreground command that never returns before later steps". A
server (vllm serve, SGLang, a FastChat/LLaVA worker, jupyter lab, ray start --block)
serves until it is killed, so the client after it never starts and the job idles until
its time limit. Found on a published script outside the corpus (LLaVA-Med's
``inference.sbatch``: the model worker in the foreground, then the test client).
"""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, lint_text
from slurmkit.slurm.records import SlurmVersion

RULE = "server-blocks-script"
HEAD = "#!/bin/bash\n#SBATCH --time=1:00:00\n#SBATCH --gres=gpu:1\n"
CONTEXT = LintContext(SlurmVersion.parse("24.11.1"))


def found(body: str) -> list[tuple[int, str]]:
    findings = lint_text(HEAD + body, "t.slurm", CONTEXT)
    return [(f.line, f.severity) for f in findings if f.rule == RULE]


@pytest.mark.parametrize(
    "body",
    [
        "vllm serve meta/llama --port 8000\npython client.py\n",
        "python -m sglang.launch_server --model m --port 8000\nsleep 60\ncurl localhost:8000\n",
        "python3 -u -m llava.serve.model_worker --port 40000\nsleep 10\npython3 ask.py\n",
        "srun --ntasks=1 vllm serve m\nsrun python bench.py\n",
        "python -m vllm.entrypoints.openai.api_server --model m\nbash eval.sh\n",
        "ray start --head --block\npython driver.py\n",
    ],
)
def test_a_foreground_server_before_its_clients_is_an_error(body: str) -> None:
    assert found(body) == [(4, "error")]


@pytest.mark.parametrize(
    "body",
    [
        "vllm serve m --port 8000 > server.log 2>&1 &\nsleep 60\npython client.py\nwait\n",
        "vllm serve m --port 8000\n",  # the job's last act: it serves until the time limit
        "vllm serve m --port 8000\necho done\n",
        "timeout 2h vllm serve m\npython client.py\n",  # bounded in time
        "srun -t 60 vllm serve m\npython client.py\n",
        "ray start --head\npython driver.py\n",  # without --block, ray start returns
        "ray job submit --no-wait -- vllm serve m\ncurl localhost:8000\n",  # Ray runs it
        "sbatch --wrap 'vllm serve m'\npython client.py\n",
        "vllm serve m --port 8000\nvllm serve m2 --port 8001\n",  # a second try, no client
        "serve() {\n  vllm serve m\n}\nserve &\npython client.py\n",  # in a function body
        'if [ -n "$SERVE" ]; then\n  vllm serve m\nelse\n  python client.py\nfi\n',
        "vllm serve m --port 8000\n    > server.log 2>&1 &\npython client.py\n",  # lost '\\'
        "vllm serve m | tee server.log\n",
    ],
)
def test_servers_that_return_or_are_the_last_act_are_not_judged(body: str) -> None:
    assert found(body) == []
