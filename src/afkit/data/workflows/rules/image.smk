# The image every job runs in: a SIF path, an oras:// reference (pulled once) or a tag built with
# `afkit image build`. image.json records its path, sha256 and tag (provenance of every job).


localrules:
    image,


rule image:
    output:
        f"{RESULTS}/image/image.json",
    log:
        f"{RESULTS}/image/image.log",
    params:
        image=CFG["image"],
        base_dir=str(CAMPAIGN.base_dir),
    run:
        afkit_rules.image(output, params, log)
