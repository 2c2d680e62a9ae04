"""The pipeline's own reconstruction, judged by tokfidelity's suite instead of tokfidelity's."""

import seed_pipeline


def pytest_tokfidelity_reconstruct(response, tokenizer):
    return seed_pipeline.reconstruct_output_ids(response, tokenizer)
