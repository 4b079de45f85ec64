"""The workflow's files the library reads are named in one layout object, and exist there."""

from __future__ import annotations

from afkit.paths import workflow_files, workflows_dir


def test_every_workflow_file_the_library_names_exists() -> None:
    files = workflow_files()
    assert files.root == workflows_dir()
    for path in (
        files.snakefile,
        files.schema,
        files.default_campaign,
        files.config_readme,
    ):
        assert path.is_file(), path
    assert (files.report_templates / files.report_template).is_file()
    for executor in ("local", "htcondor", "slurm"):
        assert (files.profile(executor) / "config.yaml").is_file(), executor
