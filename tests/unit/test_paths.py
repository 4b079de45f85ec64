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


def test_the_data_is_the_package_s_and_the_checkout_s_folders_are_links_to_it() -> None:
    from pathlib import Path

    import afkit
    from afkit.paths import data_dir, images_dir, templates_dir

    assert data_dir() == Path(afkit.__file__).parent / "data"
    repo = Path(__file__).resolve().parents[2]
    folders = {"workflows": workflows_dir(), "templates": templates_dir(), "images": images_dir()}
    for name, folder in folders.items():
        assert folder == data_dir() / name
        assert (repo / name).is_symlink() and (repo / name).resolve() == folder.resolve(), name
