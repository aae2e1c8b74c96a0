"""A batch plugin (``@plugin.run(batch=True)``): classifies delays; config ``returns`` picks how
it answers: a DataFrame (default), a DataFrame with an ``error`` column, a list, or something
wrong."""
import pandas as pd

from benchbook.plugin import Plugin, PluginError

plugin = Plugin(
    id="batcher", name="Batcher", category="test",
    inputs={"minutes": {"type": "integer"}, "carrier": {"type": "string"}, "day": {"type": "date"}},
    outputs={"label": {"type": "string"}, "late": {"type": "boolean"}, "minutes": {"type": "integer"},
             "dtypes": {"type": "json"}},
    config_schema={"type": "object", "properties": {"returns": {"type": "string"}}},
)


@plugin.run(batch=True)
def run(ctx, frame, config):
    ctx.log(f"{len(frame)} row(s)")
    returns = config.get("returns", "frame")
    late = frame["minutes"] > 15
    out = pd.DataFrame({"label": late.map({True: "late", False: "on time"}).astype("string"), "late": late,
                        "minutes": frame["minutes"],
                        "dtypes": [{c: str(t) for c, t in frame.dtypes.items()}] * len(frame)})
    if returns == "errors":
        out["error"] = [PluginError("too_early", "negative", retryable=True) if m is not pd.NA and m < 0
                        else ("no carrier" if c is pd.NA else None)
                        for m, c in zip(frame["minutes"], frame["carrier"])]
    if returns == "list":
        return [PluginError("plugin_error", "odd row") if i % 2 else {"label": f"row {i}"} for i in range(len(frame))]
    if returns == "short":
        return out.iloc[:-1]
    if returns == "extra":
        out["surprise"] = 1
    if returns == "list-short":
        return [{"label": "only"}] * (len(frame) - 1)
    if returns == "bad-row":  # row 1 breaks the boolean port, the others are fine
        out["late"] = [None if i != 1 else "maybe" for i in range(len(frame))]
    if returns == "boom":
        raise RuntimeError("the whole batch broke")
    return out
