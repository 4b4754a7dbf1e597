"""The on-disk index, both ways: writing and publishing a build, and reading one back.

The reading side (`columns`, `text`, `snapshot`, `store`) never imports the writing
side (`write`, `publish`); what both must agree on is in `layout`.
"""
