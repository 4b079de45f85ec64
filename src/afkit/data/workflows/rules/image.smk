# The image every job runs in: a SIF path, an oras:// reference (pulled once) or a tag built with
# `afkit image build`. image.json records its path, sha256 and tag (provenance of every job).
# Each rule here is one afkit command on the campaign file, rerun by hand as `snakemake -p` shows it.


localrules:
    image,
    image_root,


rule image:
    input:
        # the campaign's image key as planning wrote it: an edit of it redoes the image
        planned_input(LAYOUT.plan_image),
    output:
        LAYOUT.image_json,
    log:
        LAYOUT.image_log,
    conda:
        "../envs/afkit-job.yaml"
    params:
        campaign=CAMPAIGN_ARGS,
    shell:
        f"exec {AFKIT} campaign image {{params.campaign:q}} -o {{output:q}} --log {{log:q}} >&2"


# payload: root runs the image's own ROOT: an image without root.exe in its environment is refused
# here, before any job of the campaign runs (every job's input when a benchmark has payload root)
rule image_root:
    input:
        LAYOUT.image_json,
    output:
        LAYOUT.image_root_json,
    log:
        LAYOUT.image_root_log,
    conda:
        "../envs/afkit-job.yaml"
    params:
        benchmarks=ROOT_PAYLOAD,
    shell:
        f"exec {AFKIT} campaign image-root {{input:q}} --benchmarks {{params.benchmarks:q}} -o {{output:q}} --log {{log:q}} >&2"
