# Datasets: a manifest per dataset; generated datasets are written into the storage's local path
# (kind ao2d/esd: by the ROOT of the campaign's image, so they need the image first).
# `afkit campaign dataset CAMPAIGN NAME -o MANIFEST`: the step by hand, as `snakemake -p` shows it.


localrules:
    dataset,


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
