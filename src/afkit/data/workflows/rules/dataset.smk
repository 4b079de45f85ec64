# Datasets: a manifest per dataset; generated datasets are written into the storage's local path
# (kind ao2d/esd: by the ROOT of the campaign's image, so they need the image first).
# `afkit campaign dataset CAMPAIGN NAME -o MANIFEST`: the step by hand, as `snakemake -p` shows it.


localrules:
    dataset,
    ready,


rule dataset:
    input:
        # what the manifest is made from as planning wrote it: an edit of it redoes the manifest
        made_of=lambda wc: planned_input(LAYOUT.plan_dataset(wc.dataset)),
        image=lambda wc: (
            [LAYOUT.image_json]
            if afkit_rules.dataset_needs_image(CFG, wc.dataset)
            else []
        ),
    output:
        LAYOUT.dataset("{dataset}"),
    log:
        LAYOUT.dataset_log("{dataset}"),
    conda:
        "../envs/afkit-job.yaml"
    params:
        campaign=CAMPAIGN_ARGS,
        # kind ao2d/esd: the image whose ROOT writes the files (the rule's input)
        image=lambda wc, input: ["--image", input.image[0]] if input.image else [],
    shell:
        f"exec {AFKIT} campaign dataset {{params.campaign:q}} {{wildcards.dataset:q}} -o {{output:q}} --log {{log:q}} {{params.image:q}} >&2"


# A dataset is ready for its jobs when the campaign's image (its ROOT checked, for payload root)
# and the dataset's manifest are made: the one input of a job for all three (Snakemake's planning
# costs per input of every job; docs/campaigns.md, "Planning 10,000 jobs"). A new image or
# manifest remakes it, and so reruns the jobs reading the dataset.
rule ready:
    input:
        image=LAYOUT.image_json,
        image_root=JOB_IMAGE_ROOT,
        dataset=LAYOUT.dataset("{dataset}"),
    output:
        touch(LAYOUT.ready("{dataset}")),
    log:
        LAYOUT.ready_log("{dataset}"),
