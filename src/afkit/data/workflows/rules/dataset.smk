# Datasets: a manifest per dataset; generated datasets are written into the storage's local path
# (kind ao2d/esd: by the ROOT of the campaign's image, so they need the image first).
# `afkit campaign dataset CAMPAIGN NAME -o MANIFEST`: the step by hand, as `snakemake -p` shows it.


localrules:
    dataset,


rule dataset:
    input:
        image=lambda wc: (
            [f"{RESULTS}/image/image.json"]
            if afkit_rules.dataset_needs_image(CFG, wc.dataset)
            else []
        ),
    output:
        f"{RESULTS}/dataset/{{dataset}}.json",
    log:
        f"{RESULTS}/dataset/{{dataset}}.log",
    conda:
        "../envs/afkit-job.yaml"
    params:
        campaign=CAMPAIGN_ARGS,
        # kind ao2d/esd: the image whose ROOT writes the files (the rule's input)
        image=lambda wc, input: ["--image", input.image[0]] if input.image else [],
    shell:
        f"exec {AFKIT} campaign dataset {{params.campaign:q}} {{wildcards.dataset:q}} -o {{output:q}} --log {{log:q}} {{params.image:q}} >&2"
