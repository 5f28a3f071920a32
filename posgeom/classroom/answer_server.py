r"""The answering process's own program: it runs a student's definitions and answers calls with plain data.

It imports nothing from posgeom, and must not: it runs as ``python -I -c <this file's text>`` in a sandbox
where posgeom does not exist. Length-prefixed frames on stdin: the limits (JSON, set before any student
code runs), the program to load (JSON), then calls (pickled arguments). Replies go, as JSON, to the file
descriptor named in ``POSGEOM_ANSWER_FD``.
"""

import base64
import json
import os
import struct
import sys

#: Deepest nesting of lists, tuples and dicts in an answer.
MAX_DEPTH = 8


def encode_answer(value, depth=0):
    """A return value as JSON-able data: numbers, strings, None, numeric arrays, lists, tuples, dicts."""
    import numpy as np
    if depth > MAX_DEPTH:
        raise TypeError("the answer is nested too deeply")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            raise TypeError(f"the answer is an array of {value.dtype}, not of numbers")
        array = np.ascontiguousarray(value)
        return {"__array__": array.dtype.str, "shape": list(array.shape),
                "data": base64.b64encode(array.tobytes()).decode("ascii")}
    if isinstance(value, tuple):
        return {"__tuple__": [encode_answer(v, depth + 1) for v in value]}
    if isinstance(value, list):
        return [encode_answer(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {"__dict__": [[encode_answer(k, depth + 1), encode_answer(v, depth + 1)] for k, v in value.items()]}
    raise TypeError(f"the answer is a {type(value).__name__}; return numbers or arrays")


def _frame(stream):
    head = stream.read(4)
    if len(head) < 4:
        return None
    (size,) = struct.unpack(">I", head)
    return stream.read(size)


def _apply_limits(limits):
    import resource
    import signal
    # past the file-size limit a write fails (OSError) instead of killing the process
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    for name, value in (("RLIMIT_AS", limits.get("memory_bytes")), ("RLIMIT_NPROC", limits.get("processes")),
                        ("RLIMIT_FSIZE", limits.get("file_bytes")), ("RLIMIT_CORE", 0)):
        if value is not None and hasattr(resource, name):
            resource.setrlimit(getattr(resource, name), (int(value), int(value)))
    uid = limits.get("uid")
    if uid and os.getuid() == 0:
        # root is exempt from RLIMIT_NPROC and could undo the rest: become a user of no account
        os.chown(os.getcwd(), uid, uid)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)


def serve():
    """Answer the grader until stdin closes."""
    reply = os.fdopen(int(os.environ["POSGEOM_ANSWER_FD"]), "wb", buffering=0)
    requests = sys.stdin.buffer
    function = None

    def send(answer):
        data = json.dumps(answer).encode()
        reply.write(struct.pack(">I", len(data)) + data)

    limits = _frame(requests)
    if limits is None:
        return
    _apply_limits(json.loads(limits))
    send({"ok": None})
    while True:
        message = _frame(requests)
        if message is None:
            return
        try:
            if message[:1] == b"{":
                request = json.loads(message)
                namespace = {"__name__": "__main__"}
                exec(compile(request["source"], "<your notebook>", "exec"), namespace)  # noqa: S102
                function = namespace.get(request["function"])
                if not callable(function):
                    raise NameError(f"{request['function']} is not a function")
                answer = {"ok": None}
            else:
                import pickle

                args = pickle.loads(message)  # from the grader: its own hidden case
                answer = {"ok": encode_answer(function(*args))}
        except BaseException as err:  # noqa: BLE001 - every failure of student code is an answer
            answer = {"error": type(err).__name__, "message": str(err)[:500]}
        sys.stdout.flush()
        sys.stderr.flush()
        send(answer)


if __name__ == "__main__":
    serve()
