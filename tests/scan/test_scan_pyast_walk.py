"""``pyast.walk`` is ``ast.walk``: the same nodes in the same order, for whole modules (listed
once and remembered) and for any node inside one. The readings that use it (command lines, code
strings, taint views) depend on that order only through it."""

from __future__ import annotations

import ast
import textwrap

import pytest

from auditor.scan import pyast

SOURCES = {
    "entrypoint": '''
        import os, subprocess as sp
        from typing import Any

        API_KEY = os.environ.get("VLLM_API_KEY")

        @app.post("/v1/chat/completions")
        async def chat(request: Any, *args, **kw) -> dict:
            """Serve one request."""
            body = await request.json()
            logger.info("prompt %s", body["messages"][0]["content"])
            cmd = ["python", "-c", "print(1)"]
            cmd += ["--flag"]
            sp.run(cmd, check=True)
            return {k: v for k, v in body.items() if k != "key"}
        ''',
    "match": '''
        def route(event):
            match event:
                case {"type": "load", **rest}:
                    return rest
                case [first, *others] if first:
                    return others
                case Point(x=0, y=y) | Point(x=y, y=0):
                    return y
                case _:
                    return None
        ''',
    "comprehensions": '''
        class Cache:
            size: int = 0
            def keys(self):
                return [k async for k in self.src if (n := len(k)) > 2]
            lam = lambda self, x=1, *, y=2: (x, y, f"{x!r:>{y}}")
        try:
            import torch
        except ImportError as exc:
            raise RuntimeError("no torch") from exc
        finally:
            del exc
        with open("/dev/shm/x", "wb") as fh, ctx() as other:
            fh.write(b"\\x00")
        global_counter: dict[str, list[int]] = {}
        ''',
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_nodes_and_their_order_are_ast_walks(name: str) -> None:
    tree = ast.parse(textwrap.dedent(SOURCES[name]))
    walked = pyast.walk(tree)
    assert [id(n) for n in walked] == [id(n) for n in ast.walk(tree)]
    for node in ast.walk(tree):  # any node inside, not only the module
        assert [id(n) for n in pyast.walk(node)] == [id(n) for n in ast.walk(node)]


def test_a_module_is_listed_once_and_another_module_gets_its_own_list() -> None:
    one = ast.parse(textwrap.dedent(SOURCES["entrypoint"]))
    two = ast.parse(textwrap.dedent(SOURCES["match"]))
    first = pyast.walk(one)
    assert pyast.walk(one) is first  # remembered
    second = pyast.walk(two)
    assert second is not first
    assert [id(n) for n in second] == [id(n) for n in ast.walk(two)]
    # the earlier module, asked again, is listed again: the same nodes
    again = pyast.walk(one)
    assert [id(n) for n in again] == [id(n) for n in first]


def test_a_tree_without_some_optional_fields_is_walked_as_ast_walk_does() -> None:
    # nodes built by hand may lack fields (ast.walk skips what getattr cannot find)
    node = ast.Call(func=ast.Name(id="f", ctx=ast.Load()), args=[ast.Constant(value=1)])
    assert not hasattr(node, "keywords")
    assert [id(n) for n in pyast.walk(node)] == [id(n) for n in ast.walk(node)]
