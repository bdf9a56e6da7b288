//go:build mutation

package ops

import "vitbench/internal/mutation"

func init() {
	mutation.Register(mutation.Info{Name: CLIPNoLnPre, Site: "clip_visual graph",
		Doc: "CLIP's image tower without ln_pre (the class and patch tokens go into the first block unnormalized, as in timm's ViT)"})
}
